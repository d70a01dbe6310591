"""What a Lambda package must be before it deploys, checked on the built layer and the synthesized template.

1. Every native library loads on Lambda's arm64: each ELF file (every `*.so*` must be one) is for aarch64,
   read from its header's e_machine, and no extension module is tagged for a CPython other than 3.12 (abi3
   and untagged modules load on any).
2. Each distribution in the layer is the version its requirements resolve to: what pip resolves for the
   same requirements, CPython 3.12, on this machine's own platform (infra/packaging.py records it when it
   builds the layer). A difference means the layer's platform tags missed a release's wheels, the silent
   downgrade that manylinux2014 alone causes, or that the release has no aarch64 wheel at all.
3. Each function's code plus its layers, unzipped, stays under Lambda's limit of 262,144,000 bytes: every
   function in the synthesized template, each part measured from the cloud assembly (the dependency layer
   from its build directory), except an external layer, which counts as its stated allowance.

`make layer` (`python -m infra.package_checks`) builds the layer when missing or stale, runs all three on
each environment's stack and prints the sizes; tests/infra/test_lambda_packages.py runs them in `make test`.
"""

import json
import re
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

from infra.packaging import LAMBDA_PYTHON, LAYER_STAMP, canonical_name, layer_directory, reference_versions

LAMBDA_UNZIPPED_LIMIT_BYTES = 262_144_000
MIB = 1024 * 1024
EM_AARCH64 = 183
_MACHINE_NAMES = {3: "x86", 8: "MIPS", 20: "PowerPC", 21: "PowerPC64", 40: "32-bit ARM", 62: "x86_64", 183: "aarch64"}
_SHARED_LIBRARY = re.compile(r"\.so(\.\d+)*$")
_EXTENSION_TAG = re.compile(r"\.cpython-(\d+)([-.][^.]*)?\.so$")
# The asset of infra/stack.py's LambdaPackage ("Package") dependency layer ("Dependencies"), as the cloud
# assembly names it: measured from the layer's build directory, which a test's synthesis replaces by a stand-in.
DEPENDENCY_LAYER_ASSET = "Package/Dependencies/Code"
# The AWS Lambda Web Adapter's public layer (infra/constructs/mcp.py) cannot be downloaded here (only the
# package registries are reachable), so it counts as this allowance, not as a measurement: it holds one
# extension binary (extensions/lambda-adapter) and the /opt/bootstrap wrapper script.
EXTERNAL_LAYER_ALLOWANCES = {"LambdaAdapterLayerArm64": 20 * MIB}


def elf_machine(path: Path) -> int | None:
    """The e_machine of an ELF file's header (183 is aarch64, 62 x86_64), or None for a file that is not ELF."""
    with path.open("rb") as file:
        header = file.read(20)
    if len(header) < 20 or header[:4] != b"\x7fELF":
        return None
    # EI_DATA (byte 5): 1 for little-endian, 2 for big-endian.
    return int.from_bytes(header[18:20], "little" if header[5] == 1 else "big")


def native_library_findings(python_dir: Path) -> list[str]:
    """What would not load on arm64 CPython 3.12, one line per file."""
    findings = []
    for path in sorted(python_dir.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue
        relative, machine = path.relative_to(python_dir), elf_machine(path)
        is_library = bool(_SHARED_LIBRARY.search(path.name))
        if is_library and machine is None:
            findings.append(f"{relative}: named a shared library, but not an ELF file")
        elif machine is not None and machine != EM_AARCH64:
            findings.append(f"{relative}: ELF for {_MACHINE_NAMES.get(machine, f'machine {machine}')}, not aarch64")
        tag = _EXTENSION_TAG.search(path.name)
        if tag and tag.group(1) != LAMBDA_PYTHON.replace(".", ""):
            findings.append(f"{relative}: an extension module for CPython {tag.group(1)}, not {LAMBDA_PYTHON}")
    return findings


def installed_versions(python_dir: Path) -> dict[str, str]:
    """Each distribution installed in `python_dir` (its *.dist-info) and its version, by canonical name."""
    versions = {}
    for metadata in python_dir.glob("*.dist-info/METADATA"):
        headers = HeaderParser().parsestr(metadata.read_text(encoding="utf-8", errors="replace"), headersonly=True)
        versions[canonical_name(headers["Name"])] = headers["Version"]
    return versions


def version_findings(layer: Mapping[str, str], reference: Mapping[str, str]) -> list[str]:
    """Each distribution whose version in the layer is not the reference's, or that only one of them has."""
    findings = []
    resolved = f"pip resolves for CPython {LAMBDA_PYTHON} on this machine"
    for name in sorted(set(layer) | set(reference)):
        in_layer, expected = layer.get(name), reference.get(name)
        if in_layer == expected:
            continue
        if in_layer is None:
            findings.append(f"{name}: missing from the layer; {resolved}: {expected}")
        elif expected is None:
            findings.append(f"{name} {in_layer}: in the layer, but not in what {resolved}")
        else:
            findings.append(
                f"{name}: the layer has {in_layer}, {resolved}: {expected} (no aarch64 wheel of {expected} "
                "for the layer's platform tags: add its manylinux tag if Lambda's glibc loads it, or pin)"
            )
    return findings


def layer_findings(layer_dir: Path) -> list[str]:
    """Checks 1 and 2 on a built layer."""
    python_dir = layer_dir / "python"
    return native_library_findings(python_dir) + version_findings(
        installed_versions(python_dir), reference_versions(layer_dir)
    )


@dataclass(frozen=True)
class PackagePart:
    name: str
    unzipped_bytes: int
    # False for an external layer's allowance: a stated figure, not a measurement.
    measured: bool = True


@dataclass(frozen=True)
class FunctionPackage:
    stack: str
    logical_id: str
    handler: str
    code: PackagePart
    layers: tuple[PackagePart, ...]

    @property
    def unzipped_bytes(self) -> int:
        return self.code.unzipped_bytes + sum(layer.unzipped_bytes for layer in self.layers)


def tree_bytes(directory: Path, *, exclude: Iterable[str] = ()) -> int:
    excluded = set(exclude)
    return sum(
        path.stat().st_size
        for path in directory.rglob("*")
        if path.is_file() and not path.is_symlink() and path.name not in excluded
    )


class _Assembly:
    """One stack of a cloud assembly: its template and the staged assets its functions and layers name."""

    def __init__(self, assembly_dir: Path, stack: str, dependency_layer: Path | None) -> None:
        self.directory, self.stack, self.dependency_layer = assembly_dir, stack, dependency_layer
        self.resources: dict[str, Any] = json.loads((assembly_dir / f"{stack}.template.json").read_text())["Resources"]
        self.assets: dict[str, Any] = json.loads((assembly_dir / f"{stack}.assets.json").read_text())["files"]
        # Measured once each: most functions share one code asset and one layer.
        self._measured: dict[str, PackagePart] = {}

    def asset(self, location: Mapping[str, Any], inline_name: str) -> PackagePart:
        if "ZipFile" in location:
            return PackagePart(f"{inline_name} (inline)", len(location["ZipFile"].encode()))
        asset_hash = location["S3Key"].split(".")[0]
        if asset_hash not in self._measured:
            self._measured[asset_hash] = self._measure(asset_hash)
        return self._measured[asset_hash]

    def _measure(self, asset_hash: str) -> PackagePart:
        asset = self.assets[asset_hash]
        name = asset.get("displayName", asset_hash[:12])
        if name == DEPENDENCY_LAYER_ASSET and self.dependency_layer is not None:
            return PackagePart(name, tree_bytes(self.dependency_layer, exclude=[LAYER_STAMP]))
        path = self.directory / asset["source"]["path"]
        if path.is_dir():
            return PackagePart(name, tree_bytes(path))
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                return PackagePart(name, sum(entry.file_size for entry in archive.infolist()))
        return PackagePart(name, path.stat().st_size)

    def layer(self, reference: Any) -> PackagePart:
        if isinstance(reference, dict) and set(reference) == {"Ref"}:
            content = self.resources[reference["Ref"]]["Properties"]["Content"]
            return self.asset(content, reference["Ref"])
        text = json.dumps(reference)
        for layer_name, allowance in EXTERNAL_LAYER_ALLOWANCES.items():
            if f":layer:{layer_name}:" in text:
                return PackagePart(f"{layer_name} (external: an allowance)", allowance, measured=False)
        raise ValueError(f"an external layer of unknown size: {text} (give it an allowance in infra/package_checks.py)")

    def functions(self) -> list[FunctionPackage]:
        packages = []
        for logical_id, resource in sorted(self.resources.items()):
            if resource["Type"] != "AWS::Lambda::Function":
                continue
            properties = resource["Properties"]
            packages.append(
                FunctionPackage(
                    stack=self.stack,
                    logical_id=logical_id,
                    handler=properties.get("Handler", ""),
                    code=self.asset(properties["Code"], logical_id),
                    layers=tuple(self.layer(layer) for layer in properties.get("Layers", [])),
                )
            )
        return packages


def function_packages(assembly_dir: Path, dependency_layer: Path | None = None) -> list[FunctionPackage]:
    """Every function of every stack in the cloud assembly at `assembly_dir`, with its code and layers measured
    unzipped; the dependency layer from `dependency_layer` when given (its built directory)."""
    stacks = sorted(path.name.removesuffix(".template.json") for path in assembly_dir.glob("*.template.json"))
    return [package for stack in stacks for package in _Assembly(assembly_dir, stack, dependency_layer).functions()]


def size_findings(packages: Iterable[FunctionPackage]) -> list[str]:
    return [
        f"{package.stack} {package.logical_id} ({package.handler}): {package.unzipped_bytes:,} bytes unzipped, "
        f"over Lambda's {LAMBDA_UNZIPPED_LIMIT_BYTES:,}"
        for package in packages
        if package.unzipped_bytes >= LAMBDA_UNZIPPED_LIMIT_BYTES
    ]


def size_table(packages: Iterable[FunctionPackage]) -> str:
    """One line per function: code, layers and total unzipped, in MiB and as a share of the limit."""
    rows = [("stack", "function", "handler", "code MiB", "layers MiB", "total MiB", "of limit", "layers")]
    for package in packages:
        layer_bytes = package.unzipped_bytes - package.code.unzipped_bytes
        rows.append(
            (
                package.stack,
                package.logical_id,
                package.handler,
                f"{package.code.unzipped_bytes / MIB:.2f}",
                f"{layer_bytes / MIB:.2f}",
                f"{package.unzipped_bytes / MIB:.2f}",
                f"{package.unzipped_bytes / LAMBDA_UNZIPPED_LIMIT_BYTES:.0%}",
                ", ".join(layer.name for layer in package.layers) or "-",
            )
        )
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]) - 1)]
    lines = []
    for row in rows:
        cells = [
            cell.rjust(width) if "MiB" in rows[0][column] or column == 6 else cell.ljust(width)
            for column, (cell, width) in enumerate(zip(row, widths, strict=False))
        ]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(lines)


def main() -> int:
    """`make layer`: build the layer when missing or stale, check it, and check and print every environment's
    function sizes. Non-zero when any check fails."""
    # Imported here: synthesis needs the CDK (the `infra` extra), the layer's checks do not.
    from infra.app import build_app
    from infra.environments import ENVIRONMENTS

    layer = layer_directory()
    print(f"the dependency layer: {layer}")
    findings = layer_findings(layer)
    packages = []
    with tempfile.TemporaryDirectory(prefix="quire-layer-sizes-") as scratch:
        # The synthesis names the functions and their assets; the dependency layer is measured from its build
        # directory, so an empty one stands in for it there (sparing a copy of the layer per environment).
        placeholder = Path(scratch) / "layer-measured-from-build" / "python"
        placeholder.mkdir(parents=True)
        for env in ENVIRONMENTS:
            outdir = Path(scratch) / env
            build_app(env, outdir=str(outdir), layer_dir=placeholder.parent)[0].synth()
            packages += function_packages(outdir, dependency_layer=layer)
    print(size_table(packages))
    limit_note = f"limit: {LAMBDA_UNZIPPED_LIMIT_BYTES:,} bytes unzipped, code plus layers"
    allowances = ", ".join(f"{name} {size / MIB:.0f} MiB" for name, size in EXTERNAL_LAYER_ALLOWANCES.items())
    print(f"{limit_note}; external layers count as their allowance ({allowances})")
    findings += size_findings(packages)
    for finding in findings:
        print(f"FAIL {finding}", file=sys.stderr)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
