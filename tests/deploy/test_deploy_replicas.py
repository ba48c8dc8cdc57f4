"""The several-replica deployment files, checked offline: Kubernetes manifests against the 1.37
schemas (``kubernetes-validate``, strict) and against each other, the compose ``replicas``
profile parsed (there is no docker here), and the nginx configurations' intent.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from apcore_mcp.run.serving import STREAM_CLOSE_SECONDS
from apcore_mcp.run.workers import worker_config
from apcore_mcp.settings import SettingError, Settings
from apcore_mcp.settings.declared import options
from apcore_mcp.settings.env import LAUNCH_OPTIONS
from apcore_mcp.settings.replicas import worker_count

from tests._support.deploy import DEPLOY, REPO, final_stage

KUBERNETES = DEPLOY / "kubernetes"
K8S_VERSION = "1.37.0"
ENV_NAMES = {opt.env_var for opt in [*options(), *LAUNCH_OPTIONS] if opt.env_var}
OTHER_ENV: set[str] = set()  # variables read by something else than the app (none now)


def documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def manifests() -> list[tuple[Path, dict[str, Any]]]:
    found = [(path, doc) for path in sorted(KUBERNETES.glob("*.yaml")) for doc in documents(path)]
    return [(path, doc) for path, doc in found if doc.get("kind") != "Kustomization"]


def one(kind: str, name: str = "apcore-mcp") -> dict[str, Any]:
    (doc,) = [doc for _, doc in manifests() if doc["kind"] == kind and doc["metadata"]["name"] == name]
    return doc


def containers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return list(doc["spec"]["template"]["spec"]["containers"])


def pod_labels(doc: dict[str, Any]) -> dict[str, str]:
    return dict(doc["spec"]["template"]["metadata"]["labels"])


@pytest.mark.parametrize(("path", "doc"), manifests(), ids=lambda value: getattr(value, "name", None) or "")
def test_manifest_is_valid_against_the_kubernetes_schema(path: Path, doc: dict[str, Any]) -> None:
    try:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        pytest.fail(f"{path.name} {doc['kind']}/{doc['metadata']['name']}: {exc.message} at {list(exc.path)}")


def test_the_kustomization_lists_files_that_exist() -> None:
    (kustomization,) = documents(KUBERNETES / "kustomization.yaml")
    listed = set(kustomization["resources"])
    assert {"deployment.yaml", "service.yaml", "pdb.yaml", "hpa.yaml", "networkpolicy.yaml"} <= listed
    assert all((KUBERNETES / name).is_file() for name in listed)
    assert "secret.example.yaml" not in listed  # an example, refused on purpose


def test_every_container_has_requests_and_limits() -> None:
    for _, doc in manifests():
        if doc["kind"] != "Deployment":
            continue
        for container in containers(doc):
            resources = container["resources"]
            for what in ("cpu", "memory"):
                assert resources["requests"][what] and resources["limits"][what], (doc["metadata"]["name"], what)


def test_a_stopping_pod_leaves_the_service_before_its_calls_end() -> None:
    deployment = one("Deployment")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = containers(deployment)
    pre_stop = container["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert pre_stop >= 3, "kube-proxy and ingresses need a moment to drop a terminating endpoint"
    env = {**final_stage().env(), **{item["name"]: item.get("value") for item in container["env"]}}
    drain = float(env["APCORE_MCP_SHUTDOWN_TIMEOUT"])
    assert drain > 0, "calls in flight get no time to answer"
    assert pod["terminationGracePeriodSeconds"] >= pre_stop + stop_bound(drain, env["APCORE_MCP_WORKERS"]) + 2, (
        "SIGKILL would cut the drain"
    )
    readiness = container["readinessProbe"]
    assert readiness["httpGet"]["path"] == "/ready" and readiness["failureThreshold"] == 1
    assert container["livenessProbe"]["httpGet"]["path"] == "/health"  # stays 200 while draining
    assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    assert str(pod["securityContext"]["runAsUser"]) == final_stage().last("USER").split(":")[0]


def stop_bound(drain: float, workers: str) -> float:
    """Seconds from SIGTERM to exit: one process (our ``HttpServer``) drains calls for ``drain``, then
    streams get ``STREAM_CLOSE_SECONDS`` to close; with several workers (``auto`` may be several),
    uvicorn's own bound on each worker, which the drain fits in."""
    if workers.strip().lower() != "auto" and worker_count(workers) == 1:
        return drain + STREAM_CLOSE_SECONDS
    bound = float(worker_config(Settings(shutdown_timeout=drain, workers=2)).timeout_graceful_shutdown or 0)
    assert bound >= drain + 1, "uvicorn's bound would cut the drain short"
    return bound


def test_environment_names_are_real_settings_and_secrets_come_from_the_secret() -> None:
    (secret,) = documents(KUBERNETES / "secret.example.yaml")
    deployment = one("Deployment")
    (container,) = containers(deployment)
    for item in container["env"]:
        assert item["name"] in ENV_NAMES | OTHER_ENV, item["name"]
    refs = [item["valueFrom"]["secretKeyRef"] for item in container["env"] if "valueFrom" in item]
    assert {ref["name"] for ref in refs} == {secret["metadata"]["name"]}
    for ref in refs:
        assert ref.get("optional") or ref["key"] in secret["stringData"], ref
    by_name = {item["name"]: item for item in container["env"]}
    assert "valueFrom" in by_name["APCORE_MCP_REQUEST_STATE_KEYS"], "keys belong in a Secret"
    assert by_name["APCORE_MCP_STATELESS"]["value"] == "true"
    # the example does not start as it is: its key is refused, fail closed
    with pytest.raises(SettingError) as refused:
        Settings(request_state_keys=(secret["stringData"]["request-state-keys"],))
    assert refused.value.field == "request_state_keys"
    redis_host = re.match(r"redis://([^:/]+)", secret["stringData"]["redis-url"])
    assert redis_host and redis_host.group(1) == one("Service", "apcore-mcp-redis")["metadata"]["name"]


def test_pdb_hpa_service_and_network_policies_point_at_the_pods() -> None:
    deployment = one("Deployment")
    labels = pod_labels(deployment)
    pdb, hpa, service, policy = (
        one("PodDisruptionBudget"),
        one("HorizontalPodAutoscaler"),
        one("Service"),
        one("NetworkPolicy"),
    )
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert 1 <= pdb["spec"]["minAvailable"] < hpa["spec"]["minReplicas"]
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", deployment["metadata"]["name"])
    assert hpa["spec"]["minReplicas"] == deployment["spec"]["replicas"] >= 2
    assert service["spec"]["selector"].items() <= labels.items()
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    assert set(policy["spec"]["policyTypes"]) == {"Ingress", "Egress"}
    (container,) = containers(deployment)
    port = container["ports"][0]["containerPort"]
    assert [p["port"] for rule in policy["spec"]["ingress"] for p in rule["ports"]] == [port]
    redis = one("Deployment", "apcore-mcp-redis")
    to_redis = [rule for rule in policy["spec"]["egress"] if any(p["port"] == 6379 for p in rule["ports"])]
    (rule,) = to_redis
    assert rule["to"][0]["podSelector"]["matchLabels"].items() <= pod_labels(redis).items()
    redis_policy = one("NetworkPolicy", "apcore-mcp-redis")
    allowed = redis_policy["spec"]["ingress"][0]["from"][0]["podSelector"]["matchLabels"]
    assert allowed.items() <= labels.items()
    assert redis_policy["spec"]["egress"] == []
    assert "--save" in containers(redis)[0]["args"]


# -- compose ----------------------------------------------------------------------------------


def compose_services() -> dict[str, dict[str, Any]]:
    return dict(yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"])


def upstream_servers(conf: str, upstream: str) -> list[str]:
    block = conf.split(f"upstream {upstream} {{", 1)[1].split("}", 1)[0]
    return [
        line.split()[1]
        for line in (raw.split("#")[0].strip() for raw in block.splitlines())
        if line.startswith("server ")
    ]


def test_compose_replicas_profile_is_two_replicas_and_redis_behind_nginx() -> None:
    services = compose_services()
    profile = {name for name, service in services.items() if "replicas" in service.get("profiles", [])}
    assert profile == {"apcore-mcp-1", "apcore-mcp-2", "redis", "nginx-replicas"}
    proxy = services["nginx-replicas"]
    assert "./deploy/nginx-replicas.conf:/etc/nginx/nginx.conf:ro" in proxy["volumes"]
    assert proxy["ports"] == ["127.0.0.1:8081:80"]
    conf = (DEPLOY / "nginx-replicas.conf").read_text()
    replicas = sorted(name for name in profile if name.startswith("apcore-mcp-"))
    assert sorted(upstream_servers(conf, "apcore_mcp")) == [f"{name}:8000" for name in replicas]
    nginx_ip = proxy["networks"]["backend"]["ipv4_address"]
    for name in replicas:
        service = services[name]
        env = service["environment"]
        assert set(env) <= ENV_NAMES | OTHER_ENV, set(env) - ENV_NAMES - OTHER_ENV
        assert "ports" not in service, "replicas are reached through nginx only"
        assert env["APCORE_MCP_STATELESS"] == "true"
        assert env["APCORE_MCP_REQUEST_STATE_KEYS"] == "${APCORE_MCP_REQUEST_STATE_KEYS:-}"  # one key for all
        assert env["APCORE_MCP_FORWARDED_ALLOW_IPS"] == nginx_ip
        assert name in env["APCORE_MCP_ALLOWED_HOSTS"].split(",")
        assert env["APCORE_MCP_REDIS_URL"].startswith("redis://redis:")
        assert "/ready" in " ".join(service["healthcheck"]["test"])
        workers = env.get("APCORE_MCP_WORKERS", final_stage().env()["APCORE_MCP_WORKERS"])
        stop = stop_bound(float(env["APCORE_MCP_SHUTDOWN_TIMEOUT"]), workers)
        assert float(service["stop_grace_period"].removesuffix("s")) >= stop + 1, "SIGKILL would cut the drain"
        assert service["depends_on"]["redis"]["condition"] == "service_healthy"
        assert proxy["depends_on"][name]["condition"] == "service_healthy"
        Settings(
            **{
                opt.name: _parsed(opt, env[opt.env_var])
                for opt in options()
                if opt.env_var in env and "${" not in env[opt.env_var]
            }
        )
    assert services["redis"]["healthcheck"]["test"] == ["CMD", "redis-cli", "ping"]
    assert "ports" not in services["redis"]


def _parsed(opt: Any, text: str) -> Any:
    from apcore_mcp.settings.env import PARSERS

    return PARSERS[opt.kind](text)


# -- nginx ------------------------------------------------------------------------------------


def directives(text: str) -> list[str]:
    return [line.split("#")[0].strip() for line in text.splitlines() if line.split("#")[0].strip()]


def test_round_robin_conf_resends_only_what_is_safe() -> None:
    conf = (DEPLOY / "nginx-replicas.conf").read_text()
    upstream = conf.split("upstream apcore_mcp {", 1)[1].split("}", 1)[0]
    assert "hash" not in upstream and "ip_hash" not in upstream, "round-robin, no stickiness"
    assert not [d for d in directives(upstream) if d.startswith("keepalive")], (
        "pooled connections race a stopping replica"
    )
    assert "zone apcore_mcp 64k;" in directives(upstream)
    resendable = conf.split("map $http_mcp_method $mcp_safe_to_resend {", 1)[1].split("}", 1)[0]
    methods = {line.split()[0].strip('"') for line in directives(resendable) if not line.startswith("default")}
    assert "tools/call" not in methods and "subscriptions/listen" not in methods
    assert {"tools/list", "resources/read", "server/discover"} <= methods
    assert directives(conf).count("proxy_next_upstream error timeout non_idempotent;") == 1
    named = conf.split("location @mcp_resendable {", 1)[1].split("}", 1)[0]
    assert "proxy_next_upstream error timeout non_idempotent;" in directives(named)
    assert "proxy_buffering off;" in directives(named)


def test_affinity_conf_pins_sessions_and_legacy_sse() -> None:
    conf = (DEPLOY / "nginx-affinity.conf").read_text()
    assert "hash $http_mcp_session_id consistent;" in directives(
        conf.split("upstream apcore_mcp {", 1)[1].split("}", 1)[0]
    )
    assert "hash $remote_addr consistent;" in directives(
        conf.split("upstream apcore_mcp_by_client {", 1)[1].split("}", 1)[0]
    )
    assert "non_idempotent" not in conf
