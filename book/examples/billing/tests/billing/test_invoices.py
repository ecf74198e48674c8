# Three invoices issued on the morning of 2 March (UTC). Grouped by the
# date in the local zone, one or all of them fall on another day in a zone
# far enough from UTC (Pacific/Kiritimati, UTC+14; Pacific/Pago_Pago, UTC-11).
from datetime import date, datetime, timezone

from billing.invoices import invoices_on

ISSUED = [
    datetime(2026, 3, 2, 8, 0, tzinfo=timezone.utc),
    datetime(2026, 3, 2, 9, 30, tzinfo=timezone.utc),
    datetime(2026, 3, 2, 10, 15, tzinfo=timezone.utc),
]


def test_totals():
    count = len(invoices_on(ISSUED, date(2026, 3, 2)))
    assert count == 3, f"expected 3 invoices, got {count}"


def test_rounding():
    assert round(19.99 * 3, 2) == 59.97
