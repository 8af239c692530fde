"""apply's summary line: what a pass did, in numbers a reader can check."""

from __future__ import annotations

from reconciler.commands.apply import _summary
from reconciler.model import ClusterReport, ObjectRef, PassReport

WEB = ObjectRef("a", "apps/v1", "Deployment", "shop", "web")


def test_objects_applied_only_to_record_them_are_counted_among_the_unchanged() -> None:
    report = PassReport("0123456789abcdef", clusters={
        "a": ClusterReport("a", created=[WEB], unchanged=12, recorded=[WEB]),
        "host": ClusterReport("host", unchanged=3)})
    line = _summary(report, {"a": 3, "host": 1}, 1.0)
    assert line.startswith("revision 0123456789ab: 1 created, 0 updated, 0 replaced, "
                           "0 pruned, 12 unchanged (1 re-recorded) in 1 clusters; "
                           "3 write requests to member clusters"), line


def test_a_pass_that_records_nothing_says_nothing_of_it() -> None:
    report = PassReport("0123456789abcdef", clusters={"a": ClusterReport("a", unchanged=12)})
    line = _summary(report, {"a": 0}, 1.0)
    assert "12 unchanged in 1 clusters; zero writes to member clusters" in line, line
    assert "re-recorded" not in line
