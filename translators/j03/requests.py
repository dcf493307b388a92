"""J03 params and results ⇄ P10 requests and results, one row per operation.

Reference §3.7 (SendMessage: blocking/returnImmediately, historyLength 0), §3.8 (result
shapes), §3.9 (push configs: `id` is the task id in v0.3, the config id in v1.0),
§3.10 (metadata v1.0 cannot carry).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from translators import operations as ops
from translators.j03.common import copy_keys, need_dict, need_list, need_str
from translators.j03.objects import (
    message_to_j03,
    message_to_p10,
    stream_item_to_p10,
    stream_response_to_j03,
    task_to_j03,
    task_to_p10,
)
from translators.loss import LossReport
from translators.vocabulary import JSON

# ---------------------------------------------------------------- push configs


def push_config_to_p10(cfg: Any, path: str, loss: LossReport) -> JSON:
    """J03 PushNotificationConfig (nested) → the flat v1.0 TaskPushNotificationConfig."""
    cfg = need_dict(cfg, path)
    out: JSON = {"url": need_str(cfg.get("url"), f"{path}.url")}
    copy_keys(cfg, out, "id", "token")
    auth = cfg.get("authentication")
    if auth is not None:
        schemes = need_list(need_dict(auth, f"{path}.authentication").get("schemes"),
                            f"{path}.authentication.schemes")
        # v1.0 carries one scheme (§3.9); the rest cannot travel.
        p10_auth: JSON = {"scheme": schemes[0]} if schemes else {}
        if len(schemes) > 1:
            loss.drop(f"{path}.authentication.schemes[1:]")
        copy_keys(auth, p10_auth, "credentials")
        out["authentication"] = p10_auth
    return out


def push_config_to_j03(cfg: JSON) -> JSON:
    out: JSON = {}
    copy_keys(cfg, out, "id", "url", "token")
    auth = cfg.get("authentication")
    if auth is not None:
        out["authentication"] = {"schemes": [auth["scheme"]] if auth.get("scheme") else []}
        copy_keys(auth, out["authentication"], "credentials")
    return out


def task_push_config_to_p10(tpnc: Any, path: str, loss: LossReport) -> JSON:
    tpnc = need_dict(tpnc, path)
    out = push_config_to_p10(tpnc.get("pushNotificationConfig"),
                             f"{path}.pushNotificationConfig", loss)
    out["taskId"] = need_str(tpnc.get("taskId"), f"{path}.taskId")
    return out


def task_push_config_to_j03(cfg: JSON) -> JSON:
    return {"taskId": cfg.get("taskId", ""), "pushNotificationConfig": push_config_to_j03(cfg)}


# ---------------------------------------------------------------- SendMessage


def send_params_to_p10(params: JSON, loss: LossReport) -> JSON:
    out: JSON = {"message": message_to_p10(params.get("message"), "params.message", loss)}
    copy_keys(params, out, "metadata")
    conf = params.get("configuration")
    if conf is not None:
        conf = need_dict(conf, "params.configuration")
        p10: JSON = {}
        copy_keys(conf, p10, "acceptedOutputModes")
        if conf.get("pushNotificationConfig") is not None:
            p10["taskPushNotificationConfig"] = push_config_to_p10(
                conf["pushNotificationConfig"], "params.configuration.pushNotificationConfig", loss)
        # v0.3: 0 and absent both mean "all history"; v1.0: 0 means none (§3.7).
        if conf.get("historyLength"):
            p10["historyLength"] = conf["historyLength"]
        # Inverted flag: v0.3 absent/true = blocking = v1.0 default.
        if conf.get("blocking") is False:
            p10["returnImmediately"] = True
        out["configuration"] = p10
    return out


def send_params_to_j03(req: JSON, loss: LossReport) -> JSON:
    out: JSON = {"message": message_to_j03(req.get("message", {}), "params.message", loss)}
    copy_keys(req, out, "metadata")
    conf = req.get("configuration") or {}
    j03: JSON = {"blocking": not conf.get("returnImmediately", False)}
    copy_keys(conf, j03, "acceptedOutputModes")
    if conf.get("taskPushNotificationConfig"):
        j03["pushNotificationConfig"] = push_config_to_j03(conf["taskPushNotificationConfig"])
    if conf.get("historyLength"):
        j03["historyLength"] = conf["historyLength"]
    out["configuration"] = j03
    return out


def send_result_to_p10(result: Any, loss: LossReport) -> JSON:
    result = need_dict(result, "result")
    if result.get("kind") == "message":
        return {"message": message_to_p10(result, "result", loss)}
    return {"task": task_to_p10(result, "result", loss)}


def send_result_to_j03(result: JSON, loss: LossReport) -> JSON:
    if "message" in result:
        return message_to_j03(result["message"], "result", loss)
    return task_to_j03(result.get("task", {}), "result", loss)


# ---------------------------------------------------------------- task-id params


def _task_id(params: JSON, key: str = "id") -> str:
    return need_str(params.get(key), f"params.{key}")


def _drop_metadata(params: JSON, loss: LossReport) -> None:
    # v1.0 dropped metadata from these requests (§3.10).
    if params.get("metadata"):
        loss.drop("params.metadata")


def get_task_to_p10(params: JSON, loss: LossReport) -> JSON:
    _drop_metadata(params, loss)
    out: JSON = {"id": _task_id(params)}
    if params.get("historyLength"):
        out["historyLength"] = params["historyLength"]
    return out


def get_task_to_j03(req: JSON, loss: LossReport) -> JSON:
    out: JSON = {"id": req.get("id", "")}
    # historyLength 0 (v1.0 "none") is enforced on the answer: translators/answers.py.
    if req.get("historyLength"):
        out["historyLength"] = req["historyLength"]
    return out


def cancel_to_p10(params: JSON, loss: LossReport) -> JSON:
    out: JSON = {"id": _task_id(params)}
    copy_keys(params, out, "metadata")
    return out


def cancel_to_j03(req: JSON, loss: LossReport) -> JSON:
    out: JSON = {"id": req.get("id", "")}
    copy_keys(req, out, "metadata")
    return out


def subscribe_to_p10(params: JSON, loss: LossReport) -> JSON:
    _drop_metadata(params, loss)
    return {"id": _task_id(params)}


def subscribe_to_j03(req: JSON, loss: LossReport) -> JSON:
    return {"id": req.get("id", "")}


def push_get_to_p10(params: JSON, loss: LossReport) -> JSON:
    _drop_metadata(params, loss)
    task_id = _task_id(params)
    # The deprecated v0.3 form names no config: the SDKs' default config id is the task id.
    return {"taskId": task_id, "id": params.get("pushNotificationConfigId") or task_id}


def push_get_to_j03(req: JSON, loss: LossReport) -> JSON:
    return {"id": req.get("taskId", ""), "pushNotificationConfigId": req.get("id", "")}


def push_list_to_p10(params: JSON, loss: LossReport) -> JSON:
    _drop_metadata(params, loss)
    return {"taskId": _task_id(params)}


def push_list_to_j03(req: JSON, loss: LossReport) -> JSON:
    for key in ("pageSize", "pageToken"):
        if req.get(key):
            loss.drop(f"params.{key}")
    return {"id": req.get("taskId", "")}


def push_delete_to_p10(params: JSON, loss: LossReport) -> JSON:
    _drop_metadata(params, loss)
    return {"taskId": _task_id(params),
            "id": need_str(params.get("pushNotificationConfigId"),
                           "params.pushNotificationConfigId")}


def push_list_result_to_p10(result: Any, loss: LossReport) -> JSON:
    items = need_list(result, "result")
    return {"configs": [task_push_config_to_p10(c, f"result[{i}]", loss)
                        for i, c in enumerate(items)]}


def push_list_result_to_j03(result: JSON, loss: LossReport) -> list[JSON]:
    if result.get("nextPageToken"):
        loss.drop("result.nextPageToken")
    return [task_push_config_to_j03(c) for c in result.get("configs", [])]


def _none(_: Any, __: LossReport) -> None:
    return None


def _empty(_: Any, __: LossReport) -> JSON:
    return {}


def _list_tasks_not_in_v03(_: Any, __: LossReport) -> JSON:
    raise ops.not_in_v03(ops.LIST_TASKS)


# ---------------------------------------------------------------- the table


@dataclass(frozen=True)
class J03Rules:
    """How one operation's params and result look in J03, both directions."""

    params_to_p10: Callable[[JSON, LossReport], JSON]
    params_to_j03: Callable[[JSON, LossReport], Any]
    result_to_p10: Callable[[Any, LossReport], Any]
    result_to_j03: Callable[[JSON, LossReport], Any]


def _card_rules() -> J03Rules:
    from translators.j03.cards import card_for_v03, card_to_p10

    return J03Rules(_empty, _none, card_to_p10, card_for_v03)


def _task_result_to_p10(r: Any, loss: LossReport) -> JSON:
    return task_to_p10(r, "result", loss)


def _task_result_to_j03(r: JSON, loss: LossReport) -> JSON:
    return task_to_j03(r, "result", loss)


def _stream_item_to_p10(r: Any, loss: LossReport) -> JSON:
    return stream_item_to_p10(r, "result", loss)


def _stream_item_to_j03(r: JSON, loss: LossReport) -> JSON:
    # `final` is decided by the stream encoder, which sees the next event (§3.6).
    return stream_response_to_j03(r, False, "result", loss)


def _tpnc_result_to_p10(r: Any, loss: LossReport) -> JSON:
    return task_push_config_to_p10(r, "result", loss)


def _tpnc_result_to_j03(r: JSON, loss: LossReport) -> JSON:
    return task_push_config_to_j03(r)


def _tpnc_params_to_p10(p: JSON, loss: LossReport) -> JSON:
    return task_push_config_to_p10(p, "params", loss)


def _tpnc_params_to_j03(p: JSON, loss: LossReport) -> JSON:
    return task_push_config_to_j03(p)


J03_RULES: dict[str, J03Rules] = {
    ops.SEND: J03Rules(send_params_to_p10, send_params_to_j03,
                       send_result_to_p10, send_result_to_j03),
    ops.STREAM: J03Rules(send_params_to_p10, send_params_to_j03,
                         _stream_item_to_p10, _stream_item_to_j03),
    ops.GET_TASK: J03Rules(get_task_to_p10, get_task_to_j03,
                           _task_result_to_p10, _task_result_to_j03),
    ops.LIST_TASKS: J03Rules(_list_tasks_not_in_v03, _list_tasks_not_in_v03,
                             _list_tasks_not_in_v03, _list_tasks_not_in_v03),
    ops.CANCEL: J03Rules(cancel_to_p10, cancel_to_j03, _task_result_to_p10, _task_result_to_j03),
    ops.SUBSCRIBE: J03Rules(subscribe_to_p10, subscribe_to_j03,
                            _stream_item_to_p10, _stream_item_to_j03),
    ops.PUSH_CREATE: J03Rules(_tpnc_params_to_p10, _tpnc_params_to_j03,
                              _tpnc_result_to_p10, _tpnc_result_to_j03),
    ops.PUSH_GET: J03Rules(push_get_to_p10, push_get_to_j03,
                           _tpnc_result_to_p10, _tpnc_result_to_j03),
    ops.PUSH_LIST: J03Rules(push_list_to_p10, push_list_to_j03,
                            push_list_result_to_p10, push_list_result_to_j03),
    ops.PUSH_DELETE: J03Rules(push_delete_to_p10, push_get_to_j03, _none, _none),
}


def j03_rules(op: str) -> J03Rules:
    if op == ops.EXTENDED_CARD:
        return _card_rules()
    return J03_RULES[op]
