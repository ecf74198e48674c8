# Order dependence: test_sets_euro_default leaves module state behind that
# test_invoice_in_dollars, which runs before it in file order, never resets.
# Shuffled, the invoice fails whenever the default was set first; in
# separate worker processes it cannot see the other test's state at all.
SETTINGS = {"currency": "USD"}


def test_invoice_in_dollars():
    currency = SETTINGS["currency"]
    assert currency == "USD", f"the invoice shows {currency}, not USD"


def test_sets_euro_default():
    SETTINGS["currency"] = "EUR"
    assert SETTINGS["currency"] == "EUR"
