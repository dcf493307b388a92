"""LossReport is append-only: a fallback's new attempt and a pass-through change what the
report says, never what it recorded."""

from translators.loss import LossPolicy, LossReport


def test_a_new_attempt_keeps_the_decoding_and_drops_the_refused_interface() -> None:
    loss = LossReport(policy=LossPolicy.REJECT)
    loss.drop("params.metadata")  # the client's own request, decoded
    loss.next_attempt()
    loss.drop("params.pageSize")  # one interface's own loss
    assert loss.fields() == ["params.metadata", "params.pageSize"]
    loss.next_attempt()  # that interface refused the call: another one is tried
    assert loss.policy is LossPolicy.REJECT
    assert (loss.request, loss.fields()) == (["params.metadata"], ["params.metadata"])
    loss.drop("params.tenant")
    assert loss.fields() == ["params.metadata", "params.tenant"]
    # Nothing recorded is forgotten: each drop with the attempt it was met in.
    assert loss.log == [(0, "request", "params.metadata"), (1, "request", "params.pageSize"),
                        (2, "request", "params.tenant")]


def test_a_pass_through_lost_nothing_in_decoding() -> None:
    loss = LossReport()
    loss.drop("params.metadata")
    loss.next_attempt()
    loss.passed_through()
    assert not loss and loss.fields() == [] and loss.request == []
    assert loss.log == [(0, "request", "params.metadata")]


def test_answer_losses_and_held_values_survive_a_recount() -> None:
    loss = LossReport()
    loss.drop("params.a")
    loss.next_attempt()
    loss.answering = True
    loss.drop("result.b")
    loss.hold("result.history", [1])
    loss.passed_through()
    assert loss.response == ["result.b"]
    assert loss.fields() == ["result.b", "result.history"]
    assert loss.take("result.history") == [1]
    assert loss.fields() == ["result.b"]
