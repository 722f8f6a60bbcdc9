#!/usr/bin/env bash
# Validates the deploy files against published schemas: every manifest in deploy/k8s/ against the
# Kubernetes 1.37 schemas (kubernetes-validate, strict), deploy/compose.yaml against the Compose
# specification's JSON schema. Makes the project's Python environment first (.venv/, quick when
# it is there). `make test` runs it; see scripts/check_deploy.py for what is checked.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=$("$ROOT/scripts/python-env.sh")
exec "$VENV/bin/python" "$ROOT/scripts/check_deploy.py"
