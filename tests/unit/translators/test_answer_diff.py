"""translators/answer_diff.py: two agents' answers to one call compared by meaning. Ids,
timestamps and the history never differ; shape, state, artifacts, parts, data, texts,
metadata, error kinds and a stream's states do, each at its path in the answer's JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest
from a2a.types import a2a_pb2 as pb
from google.protobuf import json_format, struct_pb2

from translators import answer_diff
from translators.answer_diff import (
    KINDS,
    CompareRules,
    Difference,
    compare,
    parse_pattern,
    path_text,
    render,
    similarity,
)
from translators.answer_view import assemble_stream, bounded, json_size
from translators.errors import a2a_error

COMPLETED, WORKING, SUBMITTED = pb.TASK_STATE_COMPLETED, pb.TASK_STATE_WORKING, \
    pb.TASK_STATE_SUBMITTED


def text(value: str, media_type: str = "") -> pb.Part:
    return pb.Part(text=value, media_type=media_type)


def data(value: Any, **metadata: Any) -> pb.Part:
    part = pb.Part()
    json_format.ParseDict(value, part.data)
    if metadata:
        part.metadata.update(metadata)
    return part


def task(run: str = "1", state: int = COMPLETED, artifacts: Any = None, *,
         status: list[pb.Part] | None = None, metadata: dict[str, Any] | None = None) -> pb.Task:
    """A task as run `run` of an agent would send it: its ids and times are the run's."""
    t = pb.Task(id=f"task-{run}-0000-4000", context_id=f"context-{run}-4000")
    t.status.state = state  # type: ignore[assignment]
    t.status.timestamp.seconds = 1_700_000_000 + len(run) * 7
    if status is not None:
        t.status.message.CopyFrom(pb.Message(message_id=f"msg-{run}-00000", role=pb.ROLE_AGENT,
                                             parts=status))
    for i, (name, parts) in enumerate(artifacts if artifacts is not None
                                      else [("result", [text("Echo: hi")])]):
        t.artifacts.add(artifact_id=f"artifact-{run}-{i}-4000", name=name, parts=parts)
    t.history.add(message_id=f"user-{run}-00000", role=pb.ROLE_USER, parts=[text(run)])
    if metadata:
        t.metadata.update(metadata)
    return t


def kinds_paths(found: list[Difference]) -> list[tuple[str, str]]:
    return [(d.kind, d.path) for d in found]


def test_the_same_answer_from_two_runs_has_no_difference() -> None:
    a = task("first", artifacts=[("result", [text("Echo: hi"), data({"total": 3})])])
    b = task("second-run", artifacts=[("result", [text("Echo: hi"), data({"total": 3.0})])])
    assert a.id != b.id and a.status.timestamp != b.status.timestamp and a.history != b.history
    assert compare(a, b) == []
    assert compare(pb.SendMessageResponse(task=a), b) == []
    assert compare(a, pb.StreamResponse(task=b)) == []


def test_a_changed_text_is_one_text_difference() -> None:
    found = compare(task("1"), task("2", artifacts=[("result", [text("Echo: hi (v2)")])]))
    assert found == [Difference("text", "artifacts[0].parts[0].text", "Echo: hi",
                                "Echo: hi (v2)")]


def test_ids_quoted_in_strings_are_the_runs_own() -> None:
    a, b = task("1"), task("2")
    for t in (a, b):
        t.artifacts[0].parts.add(url=f"https://files.example/{t.id}/report.pdf")
        t.artifacts[0].parts.add(text=f"see {t.artifacts[0].artifact_id}")
    assert compare(a, b) == []


def test_a_data_leaf_is_reported_at_its_path_and_can_be_ignored() -> None:
    def answer(total: float, stamp: str) -> pb.Task:
        body = {"order": {"lines": [{"sku": "A", "total": 1}, {"sku": "B", "total": total}],
                          "generatedAt": stamp}}
        return task(artifacts=[("result", [text("ok"), data(body)])])

    found = compare(answer(2, "10:00"), answer(5, "10:01"))
    assert found == [
        Difference("data", "artifacts[0].parts[1].data.order.generatedAt", "10:00", "10:01"),
        Difference("data", "artifacts[0].parts[1].data.order.lines[1].total", "2", "5")]
    for ignore in ("artifacts[0].parts[1].data.order.generatedAt",
                   "artifacts[*].parts[*].data.order.generatedAt", "**.generatedAt",
                   "artifacts[*].parts[*].data.order.generated*"):
        rules = CompareRules(ignore=(ignore,))
        assert kinds_paths(compare(answer(2, "10:00"), answer(5, "10:01"), rules)) == [
            ("data", "artifacts[0].parts[1].data.order.lines[1].total")], ignore
    everything = CompareRules(ignore=("artifacts[*].parts[1].data",))
    assert compare(answer(2, "10:00"), answer(5, "10:01"), everything) == []
    # A pattern that names another artifact or part ignores nothing here.
    for other in ("artifacts[1]", "artifacts[*].parts[0]", "order.generatedAt"):
        assert len(compare(answer(2, "10:00"), answer(5, "10:01"),
                           CompareRules(ignore=(other,)))) == 2, other


def test_data_keys_absent_extra_list_items_and_types() -> None:
    a = task(artifacts=[("r", [data({"a": 1, "b": [1, 2], "c": True, "d": {"x": None}})])])
    b = task(artifacts=[("r", [data({"a": 1, "b": [1, 2, 3], "c": 1, "e": "new",
                                     "d": ["x"]})])])
    assert compare(a, b) == [
        Difference("data", "artifacts[0].parts[0].data.b[2]", "(absent)", "3"),
        Difference("data", "artifacts[0].parts[0].data.c", "true", "1"),
        Difference("data", "artifacts[0].parts[0].data.d", '{"x":null}', '["x"]'),
        Difference("data", "artifacts[0].parts[0].data.e", "(absent)", "new")]


def test_keys_that_are_no_plain_names_are_quoted_and_can_be_ignored() -> None:
    a = task(artifacts=[("r", [data({"a.b": 1, "2024": {"x y": 1}})])])
    b = task(artifacts=[("r", [data({"a.b": 2, "2024": {"x y": 2}})])])
    assert kinds_paths(compare(a, b)) == [
        ("data", 'artifacts[0].parts[0].data["2024"]["x y"]'),
        ("data", 'artifacts[0].parts[0].data["a.b"]')]
    rules = CompareRules(ignore=('artifacts[0].parts[0].data["a.b"]', '**["2024"]'))
    assert compare(a, b, rules) == []


def test_normalized_and_exact_texts() -> None:
    a = task(artifacts=[("r", [text("Echo:  Hi\n")])])
    b = task(artifacts=[("r", [text("echo: hi")])])
    assert compare(a, b) == []
    assert compare(a, b, CompareRules(text="normalized")) == []
    assert compare(a, b, CompareRules(text="exact")) == [
        Difference("text", "artifacts[0].parts[0].text", "Echo:  Hi\n", "echo: hi")]


def test_similar_texts_under_a_threshold() -> None:
    a = task(artifacts=[("r", [text("The weather in Paris is sunny, 21 degrees.")])])
    b = task(artifacts=[("r", [text("The weather in Paris is sunny, 22 degrees.")])])
    far = task(artifacts=[("r", [text("I cannot help with that.")])])
    ratio = similarity("the weather in paris is sunny, 21 degrees.",
                       "the weather in paris is sunny, 22 degrees.")
    assert 0.95 < ratio < 1.0
    assert compare(a, b, CompareRules(text="similarity", similarity=0.95)) == []
    assert kinds_paths(compare(a, b, CompareRules(text="similarity", similarity=0.99))) == [
        ("text", "artifacts[0].parts[0].text")]
    assert kinds_paths(compare(a, far, CompareRules(text="similarity", similarity=0.5))) == [
        ("text", "artifacts[0].parts[0].text")]
    assert compare(a, b) != []  # normalized is the default


def test_similarity_is_the_same_both_ways_and_bounded() -> None:
    pairs = [("abcd", "bcda"), ("aaab", "abbb"), ("", "x"), ("x" * 5000, "x" * 4000 + " y")]
    for x, y in pairs:
        assert similarity(x, y) == similarity(y, x)
        assert 0.0 <= similarity(x, y) <= 1.0
    assert similarity("same", "same") == 1.0
    long_a, long_b = " ".join(["word"] * 3000), " ".join(["word"] * 2999 + ["other"])
    assert similarity(long_a, long_b) > 0.99  # word by word, past the character limit
    words = [f"w{i}" for i in range(600)]
    # Past the word limit only the shared words count, whatever their order.
    assert similarity(" ".join(words), " ".join(reversed(words))) == 1.0
    assert similarity(" ".join(words[:60]), " ".join(reversed(words[:60]))) < 0.5


def test_errors_compare_by_kind_not_message() -> None:
    missing = a2a_error("TaskNotFoundError", "no task abc")
    assert compare(task(), missing) == [Difference("answer", "", "task",
                                                   "error TaskNotFoundError")]
    assert compare(missing, a2a_error("TaskNotFoundError", "task xyz is gone")) == []
    assert compare(missing, a2a_error("InternalError", "boom")) == [
        Difference("error", "error.kind", "TaskNotFoundError", "InternalError")]
    # v0.3's name for an error is the same kind as v1.0's.
    assert compare(a2a_error("AuthenticatedExtendedCardNotConfiguredError"),
                   a2a_error("ExtendedAgentCardNotConfiguredError")) == []


def test_a_task_and_a_message_are_different_answers() -> None:
    message = pb.Message(message_id="m-0000-0001", role=pb.ROLE_AGENT, parts=[text("hi")])
    assert compare(pb.SendMessageResponse(message=message), task()) == [
        Difference("answer", "", "message", "task")]
    other = pb.Message(message_id="m-0000-0002", role=pb.ROLE_AGENT, parts=[text("bye")])
    other.metadata.update({"lang": "en"})
    assert kinds_paths(compare(message, other)) == [("text", "parts[0].text"),
                                                     ("data", "metadata.lang")]
    assert compare(message, other, CompareRules(ignore=("parts", "metadata"))) == []


def test_state_status_message_and_metadata() -> None:
    a = task(state=COMPLETED, status=[text("done")], metadata={"model": "v1", "trace": "a"})
    b = task(state=pb.TASK_STATE_FAILED, status=[text("failed"), data({"code": 7})],
             metadata={"model": "v2", "trace": "b"})
    assert compare(a, b) == [
        Difference("state", "status.state", "TASK_STATE_COMPLETED", "TASK_STATE_FAILED"),
        Difference("part_count", "status.message.parts", "1", "2"),
        Difference("text", "status.message.parts[0].text", "done", "failed"),
        Difference("data", "metadata.model", "v1", "v2"),
        Difference("data", "metadata.trace", "a", "b")]
    rules = CompareRules(ignore=("status.message", "metadata.trace"))
    assert kinds_paths(compare(a, b, rules)) == [("state", "status.state"),
                                                 ("data", "metadata.model")]
    assert kinds_paths(compare(task(status=[text("x")]), task())) == [
        ("part_count", "status.message.parts")]


def test_artifact_and_part_shapes() -> None:
    a = task(artifacts=[("result", [text("a"), data({"x": 1})]),
                        ("chart", [pb.Part(raw=b"\x89PNG1", media_type="image/png")])])
    b = task(artifacts=[("answer", [text("a", "text/markdown"), text("{}")]),
                        ("chart", [pb.Part(raw=b"\x89PNG2", media_type="image/png")]),
                        ("extra", [])])
    found = compare(a, b)
    assert kinds_paths(found) == [
        ("artifact_count", "artifacts"), ("artifact_name", "artifacts[0].name"),
        ("media_type", "artifacts[0].parts[0].mediaType"),
        ("part_kind", "artifacts[0].parts[1]"), ("data", "artifacts[1].parts[0].raw")]
    assert (found[0].primary, found[0].candidate) == ("2", "3")
    assert (found[3].primary, found[3].candidate) == ("data", "text")
    assert found[4].primary.startswith("5 bytes sha256:")
    assert kinds_paths(compare(a, b, CompareRules(ignore=("artifacts",)))) == []


def test_implied_media_types_are_the_same() -> None:
    a = task(artifacts=[("r", [text("x"), data({"k": 1})])])
    b = task(artifacts=[("r", [text("x", "Text/Plain"), data({"k": 1})])])
    b.artifacts[0].parts[1].media_type = "application/json"
    assert compare(a, b) == []


def test_other_part_fields() -> None:
    a = task(artifacts=[("r", [pb.Part(url="https://x.example/a", filename="a.pdf"),
                               data({"k": 1}, source="db")])])
    b = task(artifacts=[("r", [pb.Part(url="https://x.example/b", filename="b.pdf"),
                               data({"k": 1}, source="cache")])])
    assert kinds_paths(compare(a, b)) == [
        ("data", "artifacts[0].parts[0].url"), ("data", "artifacts[0].parts[0].filename"),
        ("data", "artifacts[0].parts[1].metadata.source")]
    a.artifacts[0].description, b.artifacts[0].description = "Report", "The report"
    assert ("text", "artifacts[0].description") in kinds_paths(compare(a, b))


def stream(run: str, states: list[int], chunks: list[str], *, append: bool = True
           ) -> list[pb.StreamResponse]:
    """A streamed task of run `run`: a Task, then status updates and artifact chunks."""
    first = task(run, states[0], artifacts=[])
    events = [pb.StreamResponse(task=first)]
    for state in states[1:-1]:
        events.append(pb.StreamResponse(status_update=pb.TaskStatusUpdateEvent(
            task_id=first.id, context_id=first.context_id, status=pb.TaskStatus(state=state))))
    for i, chunk in enumerate(chunks):
        events.append(pb.StreamResponse(artifact_update=pb.TaskArtifactUpdateEvent(
            task_id=first.id, append=append and i > 0, last_chunk=i == len(chunks) - 1,
            artifact=pb.Artifact(artifact_id=f"artifact-{run}-4000", name="result",
                                 parts=[text(chunk)]))))
    events.append(pb.StreamResponse(status_update=pb.TaskStatusUpdateEvent(
        task_id=first.id, status=pb.TaskStatus(state=states[-1]))))
    return events


def test_streams_of_the_same_meaning() -> None:
    chunked = stream("1", [SUBMITTED, WORKING, WORKING, COMPLETED], ["Echo", ": ", "hi"])
    whole = stream("2", [SUBMITTED, WORKING, COMPLETED], ["Echo: hi"])
    assert compare(chunked, whole) == []
    answer, states = assemble_stream(chunked)
    assert isinstance(answer, pb.Task)
    assert [p.text for p in answer.artifacts[0].parts] == ["Echo: hi"]
    assert states == ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED")
    # A stream's final task is the same answer as the unary one.
    assert compare(chunked, task("3")) == []


def test_a_stream_shape_difference() -> None:
    a = stream("1", [SUBMITTED, WORKING, COMPLETED], ["Echo: hi"])
    b = stream("2", [WORKING, COMPLETED], ["Echo: hi"])
    assert compare(a, b) == [Difference("stream_shape", "events",
                                        "SUBMITTED > WORKING > COMPLETED",
                                        "WORKING > COMPLETED")]
    failed = stream("2", [SUBMITTED, WORKING, pb.TASK_STATE_FAILED], ["Echo"])
    assert kinds_paths(compare(a, failed)) == [("stream_shape", "events"),
                                               ("state", "status.state"),
                                               ("text", "artifacts[0].parts[0].text")]


def test_replaced_artifacts_and_streams_without_a_task() -> None:
    replaced = stream("1", [WORKING, COMPLETED], ["draft", "Echo: hi"], append=False)
    answer, _ = assemble_stream(replaced)
    assert isinstance(answer, pb.Task)
    assert [p.text for p in answer.artifacts[0].parts] == ["Echo: hi"]
    # Only an appended chunk's first text joins the text before it.
    two = [*replaced, pb.StreamResponse(artifact_update=pb.TaskArtifactUpdateEvent(
        append=True, artifact=pb.Artifact(artifact_id="artifact-1-4000",
                                          parts=[text("!"), text("P.S.")])))]
    answer, _ = assemble_stream(two)
    assert isinstance(answer, pb.Task)
    assert [p.text for p in answer.artifacts[0].parts] == ["Echo: hi!", "P.S."]
    reply = pb.StreamResponse(message=pb.Message(message_id="m-0000-1", parts=[text("hi")]))
    assert compare([reply], [reply]) == []
    assert compare([reply], replaced) == [Difference("answer", "", "message", "task")]
    assert compare([], replaced) == [Difference("answer", "", "no answer", "task")]
    assert compare([], []) == []


def test_other_answers_compare_as_data_without_per_run_fields() -> None:
    def config(run: str, url: str) -> pb.TaskPushNotificationConfig:
        return pb.TaskPushNotificationConfig(id=f"cfg-{run}", task_id=f"task-{run}-00000",
                                             url=url)
    assert compare(config("1", "https://hook.example/a"),
                   config("2", "https://hook.example/a")) == []
    assert kinds_paths(compare(config("1", "https://hook.example/a"),
                               config("1", "https://hook.example/b"))) == [("data", "url")]
    listed = [pb.ListTasksResponse(tasks=[task(run)], next_page_token=f"page-{run}")
              for run in ("1", "2")]
    assert compare(*listed) == []
    listed[1].tasks[0].status.state = pb.TASK_STATE_FAILED
    assert kinds_paths(compare(*listed)) == [("data", "tasks[0].status.state")]


def test_cards_keep_their_skill_ids_and_maps() -> None:
    def card(skill: str, location: str) -> pb.AgentCard:
        c = pb.AgentCard(name="travel", skills=[pb.AgentSkill(id=skill, name="Book")])
        c.security_schemes["key"].api_key_security_scheme.location = location
        c.security_schemes["bearer"].http_auth_security_scheme.scheme = "Bearer"
        return c
    assert compare(card("book", "header"), card("book", "header")) == []
    assert kinds_paths(compare(card("book", "header"), card("reserve", "query"))) == [
        ("data", "securitySchemes.key.apiKeySecurityScheme.location"),
        ("data", "skills[0].id")]


def test_a_difference_shows_at_most_200_characters() -> None:
    long_a, long_b = "a" * 500, "b" * 500
    (found,) = compare(task(artifacts=[("r", [text(long_a)])]),
                       task(artifacts=[("r", [text(long_b)])]))
    assert len(found.primary) == 200 and found.primary.endswith("…")
    assert found.candidate == "b" * 199 + "…"
    assert all(k in KINDS for k, _ in kinds_paths([found]))


def test_paths_and_patterns() -> None:
    assert path_text(("artifacts", 0, "parts", 1, "data", "total")) == \
        "artifacts[0].parts[1].data.total"
    assert path_text(("data", "a.b", "x-y", "", 2)) == 'data["a.b"].x-y[""][2]'
    assert parse_pattern("artifacts[*].parts[2].data.gen*") == (
        ("name", "artifacts"), ("index", None), ("name", "parts"), ("index", 2),
        ("name", "data"), ("name", "gen*"))
    assert parse_pattern('**["a.b"]') == (("any", None), ("key", "a.b"))
    for bad in ("", ".metadata", "a..b", "a[x]", "a[", 'a["b]'):
        with pytest.raises(ValueError):
            parse_pattern(bad)
    with pytest.raises(ValueError):
        CompareRules(ignore=("a..b",))
    with pytest.raises(ValueError):
        CompareRules(text="fuzzy")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        CompareRules(similarity=1.5)


def test_render_views() -> None:
    t = task("1")
    assert render(t) == json_format.MessageToDict(t)
    assert render(t)["contextId"] == t.context_id  # the JSON names, ids kept
    assert render(a2a_error("TaskNotFoundError", "gone")) == {
        "error": {"kind": "TaskNotFoundError", "message": "gone"}}
    events = stream("1", [WORKING, COMPLETED], ["x"])
    view = render(events)
    assert [next(iter(e)) for e in view["events"]] == ["task", "artifactUpdate",
                                                       "statusUpdate"]


def test_render_is_bounded() -> None:
    big = task(artifacts=[(f"a{i}", [text("x" * 3000), data({"k": list(range(300))})])
                          for i in range(20)])
    for limit in (100, 1000, 4000):
        view = render(big, limit)
        json.dumps(view)
        assert json_size(view) <= limit
    cut = render(big, 4000)
    assert cut["artifacts"][0]["parts"][0]["text"].endswith("…")
    assert json_size(bounded({"k" * 5000: 1}, 200)) <= 200  # a key no cut shortens


def test_render_spells_numbers_json_has_not() -> None:
    # gRPC carries NaN and infinities in a Value; ProtoJSON has no spelling for them.
    t = task(artifacts=[("r", [data({"x": 1})])], metadata={"a": float("nan")})
    t.artifacts[0].parts[0].data.struct_value.fields["x"].number_value = float("inf")
    view = render(t)
    json.dumps(view, allow_nan=False)
    assert view["metadata"] == {"a": "nan"}
    assert view["artifacts"][0]["parts"][0]["data"] == {"x": "inf"}
    assert compare(t, t) == []


def test_a_comparison_lists_a_bounded_number_of_differences_and_every_kind() -> None:
    # A data table whose every cell differs made one difference per cell (hundreds of
    # thousands for one large answer, each kept in the report's memory).
    def task(cells: list[object], text: str) -> pb.Task:
        t = pb.Task(id="t-1", status=pb.TaskStatus(state=pb.TaskState.TASK_STATE_COMPLETED))
        table = struct_pb2.Value()
        table.list_value.extend(cells)
        t.artifacts.add(artifact_id="a-1").parts.add().data.CopyFrom(table)
        t.artifacts.add(artifact_id="a-2").parts.add(text=text)
        return t

    found = compare(task(list(range(3_000)), "total 3000"),
                    task([str(n) for n in range(3_000)], "total: unknown"))
    assert len(found) == answer_diff.MAX_LISTED + 1
    assert {d.kind for d in found[:answer_diff.MAX_LISTED]} == {"data"}
    assert found[-1].kind == "text" and found[-1].path == "artifacts[1].parts[0].text"
