"""Generates the gRPC stubs from the repository's proto/ while the package is built.

The protos are read from ``../../proto`` (this directory is ``clients/python`` of the
repository), or from ``$ONTOLOOP_PROTO_DIR``, and compiled with the protoc that grpcio-tools
bundles into ``ontoloop_client/_proto/`` of the build. protoc writes imports such as
``from ontoloop.v1 import common_pb2``; they are rewritten to the package's own path, so the
stubs never claim a top-level ``ontoloop`` package.
"""

import os
import re
from importlib import resources
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
PACKAGE = "ontoloop_client._proto"
IMPORT = re.compile(r"^from ontoloop\.v1 import ", re.MULTILINE)


def proto_root() -> Path:
    root = Path(os.environ.get("ONTOLOOP_PROTO_DIR") or HERE.parent.parent / "proto")
    if not (root / "ontoloop" / "v1").is_dir():
        raise SystemExit(
            f"ontoloop-client: no ontoloop/v1 protos under {root}; install from the repository "
            "(pip install ./clients/python) or set ONTOLOOP_PROTO_DIR to its proto/ folder"
        )
    return root


def generate(out: Path) -> None:
    from grpc_tools import protoc

    root = proto_root()
    protos = sorted(str(p.relative_to(root)) for p in (root / "ontoloop" / "v1").glob("*.proto"))
    well_known = str(resources.files("grpc_tools") / "_proto")
    out.mkdir(parents=True, exist_ok=True)
    code = protoc.main(
        [
            "grpc_tools.protoc",
            f"--proto_path={root}",
            f"--proto_path={well_known}",
            f"--python_out={out}",
            f"--pyi_out={out}",
            f"--grpc_python_out={out}",
            *protos,
        ]
    )
    if code != 0:
        raise SystemExit(f"ontoloop-client: protoc failed ({code}) on {root}")
    for folder in (out, out / "ontoloop", out / "ontoloop" / "v1"):
        (folder / "__init__.py").touch()
    for module in (out / "ontoloop" / "v1").iterdir():
        if module.suffix in (".py", ".pyi"):
            text = IMPORT.sub(f"from {PACKAGE}.ontoloop.v1 import ", module.read_text())
            if re.search(r"^(from|import) ontoloop\.", text, re.MULTILINE):
                raise SystemExit(f"ontoloop-client: an import in {module.name} was not rewritten")
            module.write_text(text)


class BuildWithStubs(build_py):
    """build_py, then the stubs into the build's ontoloop_client/_proto/."""

    def run(self):
        super().run()
        generate(Path(self.build_lib) / "ontoloop_client" / "_proto")


setup(cmdclass={"build_py": BuildWithStubs})
