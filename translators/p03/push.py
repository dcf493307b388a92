"""Push notification configs: the nested v0.3 proto configs ⇄ the flat v1.0 one.

Reference §3.9: v0.3 `TaskPushNotificationConfig{name="tasks/{t}/pushNotificationConfigs/{c}",
push_notification_config{id,url,token,authentication}}`; v1.0 `TaskPushNotificationConfig
{task_id,id,url,token,authentication}`; AuthenticationInfo `schemes[]` ⇄ `scheme`.
"""

from __future__ import annotations

from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03
from a2a.types import a2a_pb2 as pb

from translators.loss import LossReport
from translators.p03.common import at, parse_push_config_name, push_config_name


def auth_to_p10(auth: v03.AuthenticationInfo, path: str,
                loss: LossReport) -> pb.AuthenticationInfo:
    # v1.0 carries one scheme (reference §3.9); the rest cannot travel.
    if len(auth.schemes) > 1:
        loss.drop(at(path, "schemes[1:]"))
    return pb.AuthenticationInfo(scheme=auth.schemes[0] if auth.schemes else "",
                                 credentials=auth.credentials)


def auth_to_p03(auth: pb.AuthenticationInfo) -> v03.AuthenticationInfo:
    return v03.AuthenticationInfo(schemes=[auth.scheme] if auth.scheme else [],
                                  credentials=auth.credentials)


def push_config_to_p10(cfg: v03.PushNotificationConfig, task_id: str, path: str,
                       loss: LossReport) -> pb.TaskPushNotificationConfig:
    """The nested v0.3 config → the flat v1.0 one; ``task_id`` is empty inside a
    SendMessageConfiguration, where the message names the task."""
    out = pb.TaskPushNotificationConfig(task_id=task_id, id=cfg.id, url=cfg.url,
                                        token=cfg.token)
    if cfg.HasField("authentication"):
        out.authentication.CopyFrom(auth_to_p10(cfg.authentication,
                                                at(path, "authentication"), loss))
    return out


def push_config_to_p03(cfg: pb.TaskPushNotificationConfig) -> v03.PushNotificationConfig:
    """The flat v1.0 config minus its task binding (and tenant, which routing consumed)."""
    out = v03.PushNotificationConfig(id=cfg.id, url=cfg.url, token=cfg.token)
    if cfg.HasField("authentication"):
        out.authentication.CopyFrom(auth_to_p03(cfg.authentication))
    return out


def task_push_config_to_p10(tpnc: v03.TaskPushNotificationConfig, path: str,
                            loss: LossReport) -> pb.TaskPushNotificationConfig:
    task_id, name_config_id = parse_push_config_name(tpnc.name, at(path, "name"))
    out = push_config_to_p10(tpnc.push_notification_config, task_id,
                             at(path, "pushNotificationConfig"), loss)
    # py@v0.3 builds the name from the inner id, so the inner id is the one to trust.
    out.id = out.id or name_config_id
    return out


def task_push_config_to_p03(cfg: pb.TaskPushNotificationConfig,
                            path: str) -> v03.TaskPushNotificationConfig:
    # No config id means the SDKs' default, the task id (reference §3.9).
    config_id = cfg.id or cfg.task_id
    inner = push_config_to_p03(cfg)
    inner.id = config_id
    return v03.TaskPushNotificationConfig(
        name=push_config_name(cfg.task_id, config_id, at(path, "taskId"), at(path, "id")),
        push_notification_config=inner)
