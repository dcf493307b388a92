"""LossReport.fork: a fallback's fresh attempt keeps what the client's decoding lost and
shares no list with the attempt it came from."""

from translators.loss import LossPolicy, LossReport


def test_a_fork_keeps_the_losses_so_far_and_each_attempt_adds_its_own() -> None:
    decoded = LossReport(policy=LossPolicy.REJECT)
    decoded.drop("params.metadata")
    first = decoded.fork()
    first.drop("params.pageSize")  # one interface's own loss
    second = decoded.fork()
    assert second.policy is LossPolicy.REJECT
    assert (second.request, second.fields()) == (["params.metadata"], ["params.metadata"])
    assert first.fields() == ["params.metadata", "params.pageSize"]
    assert decoded.fields() == ["params.metadata"]  # the original is untouched
