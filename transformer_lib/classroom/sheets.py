"""After grading: the sheets anchored with a key only the teacher holds, verified, and the totals re-run.

``grades.sha256`` proves that a file has not changed by accident, but whoever edits a sheet can regenerate it.
With ``--key-file KEY`` the grader also writes ``grades.hmac``: an HMAC-SHA256 (:mod:`hmac`, RFC 2104) of every
file it wrote, keyed with the secret in ``KEY``, and a last line that covers the list itself, so that a line
removed or added is caught as well. Without the key nobody can write a valid one. The key file is created (32
random bytes, hex, mode 0600) the first time, with a message, and must lie outside the output folder: keep it
with your own files, not with the sheets you upload or share.

Two commands of ``tl-grade`` (:func:`main`):

* ``tl-grade verify grades/ --key-file KEY``: every file listed in ``grades.hmac`` still has its HMAC, the list
  is whole, and no sheet or feedback file in the folder is missing from it; exit status 1 otherwise.
* ``tl-grade totals grades/ --answers grades/grades_answers.csv [--lms moodle|canvas] [--key-file KEY]``: once
  you have filled the ``points`` column of the answers sheet, the totals again from ``grades.csv`` with the
  written answers' points merged (see :func:`~.gradebook.totals_from_rows`), the LMS file if asked, and the
  manifest and anchor written anew. With a key, the sheets are verified first and nothing is written if one
  changed.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import os
import secrets
import sys
from pathlib import Path

from .gradebook import csv_text, read_sheet, sha256_file, write_atomic
from .lms import LMS_FORMATS, lms_csv
from .sheet_rows import totals_from_rows, written_points
from .submissions import roster_rows

__all__ = ["load_key", "anchor", "verify", "retotal", "main"]

_LIST = "*"  # the name on the anchor's last line: the HMAC of the lines above it


def load_key(key_file: str | Path, out_folder: str | Path, *, create: bool = True) -> bytes:
    """The teacher's key from ``key_file``; created (with a message on stderr) when missing and ``create``.

    The key file must lie outside ``out_folder``: a key next to the sheets would travel with them.
    """
    key_path, folder = Path(key_file).resolve(), Path(out_folder).resolve()
    if key_path == folder or folder in key_path.parents:
        raise ValueError(f"key_file: must lie outside the output folder {folder}, got {key_path}")
    if not key_path.exists():
        if not create:
            raise FileNotFoundError(f"key_file: no key at {key_path} (it is created when you grade with --key-file)")
        key_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32) + "\n")
        print(
            f"Created a new grading key in {key_path}. Keep it private and keep it: `tl-grade verify` needs it "
            "to prove that the sheets are the ones the grader wrote.",
            file=sys.stderr,
        )
    key = key_path.read_text(encoding="utf-8").strip()
    if len(key) < 32:
        raise ValueError(f"key_file: expected at least 32 characters of key in {key_path}, got {len(key)}")
    return key.encode("utf-8")


def _mac(key: bytes, data: bytes) -> str:
    return hmac.new(key, data, hashlib.sha256).hexdigest()


def _file_mac(key: bytes, path: Path) -> str:
    return _mac(key, path.read_bytes())


def _name(path: Path, folder: Path) -> str:
    path = path.resolve()
    return path.relative_to(folder).as_posix() if folder in path.parents else str(path)


def anchor(files: list[Path], key: bytes, anchor_path: str | Path) -> str:
    """Write ``anchor_path``: ``<hmac>  <name>`` for each of ``files`` (names relative to its folder), then the
    HMAC of those lines; returns its SHA-256."""
    anchor_path = Path(anchor_path)
    folder = anchor_path.resolve().parent
    lines = "".join(f"{_file_mac(key, p)}  {_name(p, folder)}\n" for p in files if p.resolve() != anchor_path.resolve())
    return write_atomic(anchor_path, lines + f"{_mac(key, lines.encode('utf-8'))}  {_LIST}\n")


def verify(folder: str | Path, key: bytes, anchor_name: str = "grades.hmac") -> list[str]:
    """What is wrong with the sheets in ``folder`` against its anchor (empty: all is as the grader wrote it)."""
    folder = Path(folder).resolve()
    anchor_path = folder / anchor_name
    if not anchor_path.exists():
        return [f"{anchor_name}: missing (grade with --key-file to write it)"]
    text = anchor_path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    if not lines or not lines[-1].rstrip("\n").endswith(f"  {_LIST}"):
        return [f"{anchor_name}: its last line is not the HMAC of the list"]
    body = "".join(lines[:-1])
    if not hmac.compare_digest(lines[-1].split("  ", 1)[0], _mac(key, body.encode("utf-8"))):
        return [f"{anchor_name}: the list of files was changed, or another key was used"]
    problems, listed = [], set()
    for line in body.splitlines():
        digest, name = line.split("  ", 1)
        path = Path(name) if Path(name).is_absolute() else folder / name
        listed.add(path.resolve())
        if not path.exists():
            problems.append(f"{name}: missing")
        elif not hmac.compare_digest(digest, _file_mac(key, path)):
            problems.append(f"{name}: changed since grading")
    for path in sorted([*folder.glob("*.csv"), *folder.glob("feedback/*.md")]):
        if path.resolve() not in listed:
            problems.append(f"{_name(path, folder)}: not written by the grader (not in {anchor_name})")
    return problems


def retotal(
    folder: str | Path,
    answers: str | Path | None,
    *,
    lms: str | None = None,
    roster: str | Path | None = None,
    key_file: str | Path | None = None,
    stem: str = "grades",
) -> dict[Path, str]:
    """The totals of ``folder/<stem>.csv`` again, with the filled ``answers`` sheet's points merged; also the LMS
    file when ``lms`` is given; then the manifest and (with ``key_file``) the anchor anew. Returns ``{path:
    sha256}`` of what was written. With a key, a sheet other than ``answers`` that changed since grading stops it
    before anything is written; the filled answers sheet is anchored as it is now."""
    folder = Path(folder)
    key = load_key(key_file, folder, create=False) if key_file is not None else None
    if key is not None:  # the answers sheet is the one the teacher was meant to change
        filled = _name(Path(answers), folder.resolve()) if answers is not None else None
        problems = [p for p in verify(folder, key, f"{stem}.hmac") if p != f"{filled}: changed since grading"]
        if problems:
            raise ValueError("the sheets changed since grading, so they are not re-anchored: " + "; ".join(problems))
    per_exercise = folder / f"{stem}.csv"
    if not per_exercise.exists():
        raise FileNotFoundError(f"folder: no {per_exercise.name} in {folder}")
    written_pts = written_points(read_sheet(answers), str(answers)) if answers is not None else None
    columns, table = totals_from_rows(read_sheet(per_exercise), written_pts)
    written: dict[Path, str] = {}
    totals = folder / f"{stem}_totals.csv"
    written[totals] = write_atomic(totals, csv_text(columns, table))
    if lms is not None:
        path = folder / f"{stem}_{lms}.csv"
        written[path] = write_atomic(path, lms_csv(lms, columns, table, roster_rows(roster) if roster else None))
    manifest = folder / f"{stem}.sha256"
    listed = [line.split("  ", 1)[1] for line in manifest.read_text().splitlines()] if manifest.exists() else []
    files = [folder / n for n in listed if (folder / n).exists()]
    files += [p for p in written if p.name not in listed]
    written[manifest] = write_atomic(
        manifest, "".join(f"{sha256_file(p)}  {_name(p, folder.resolve())}\n" for p in files)
    )
    if key is not None:
        written[folder / f"{stem}.hmac"] = anchor([*files, manifest], key, folder / f"{stem}.hmac")
    return written


def main(argv: list[str]) -> int:
    """``tl-grade verify FOLDER --key-file KEY`` and ``tl-grade totals FOLDER --answers CSV ...``."""
    parser = argparse.ArgumentParser(prog="tl-grade", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    v = commands.add_parser("verify", help="check the sheets in FOLDER against their HMAC anchor")
    v.add_argument("folder", type=Path, metavar="FOLDER")
    v.add_argument("--key-file", type=Path, required=True, metavar="KEY", help="the key the sheets were graded with")
    t = commands.add_parser("totals", help="the totals again, with the written answers' points merged")
    t.add_argument("folder", type=Path, metavar="FOLDER")
    t.add_argument("--answers", type=Path, metavar="CSV", help="the answers sheet with its points column filled")
    t.add_argument("--lms", choices=LMS_FORMATS, help="also write <stem>_<lms>.csv for that LMS's grade import")
    t.add_argument("--roster", type=Path, metavar="CSV", help="the roster, for the LMS file's optional columns")
    t.add_argument("--key-file", type=Path, metavar="KEY", help="verify, then re-anchor the sheets with this key")
    args = parser.parse_args(argv)
    try:
        if args.command == "verify":
            problems = verify(args.folder, load_key(args.key_file, args.folder, create=False))
            for problem in problems:
                print(f"FAILED {problem}", file=sys.stderr)
            if not problems:
                print(f"OK: every sheet in {args.folder} is as the grader wrote it.")
            return 1 if problems else 0
        written = retotal(args.folder, args.answers, lms=args.lms, roster=args.roster, key_file=args.key_file)
    except (FileNotFoundError, ValueError) as e:
        print(e, file=sys.stderr)
        return 2
    for path, digest in written.items():
        print(f"sha256 {digest}  {path}")
    return 0
