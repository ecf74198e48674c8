# The report header writes the zone's offset in whole hours ("UTC+5"): a
# zone with a half-hour or 45-minute offset (Asia/Kathmandu, UTC+05:45)
# does not fit. A fixed instant, so the daylight-saving date plays no part.
from datetime import datetime, timedelta, timezone


def test_header_offset():
    offset = datetime(2026, 3, 2, 12, tzinfo=timezone.utc).astimezone().utcoffset()
    hours, rest = divmod(offset, timedelta(hours=1))
    assert not rest, f"offset {offset} is not a whole number of hours"
