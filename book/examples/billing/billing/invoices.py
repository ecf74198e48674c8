"""The day's invoices: grouped by the date they were issued on."""


def invoices_on(issued, day):
    """The instants of `issued` that fall on `day`."""
    return [t for t in issued if t.astimezone().date() == day]
