"""The first process of a submission's sandbox (run by :mod:`transformer_lib.classroom.sandbox`; standard library only).

Started as root inside fresh mount and PID namespaces (``unshare --mount --pid --fork --mount-proc``), it

1. copies the kernel's connection file into a private tmpfs mounted on the kernel's working folder (the kernel's
   only writable folder, also its ``HOME`` and ``TMPDIR``), and mounts a fresh tmpfs on ``/dev/shm``: nothing the
   kernel writes is shared with the grader or other kernels;
2. mounts an empty, read-only tmpfs over every folder to hide (the submissions, the grader's output, the original
   library and solutions, Jupyter's runtime folder with the other kernels' connection files);
3. remounts every other mount read-only;
4. drops every capability for good (``setpriv``: empty bounding set, ``noroot`` secure bits, no new privileges),
   so that the kernel, although uid 0, can neither undo these mounts nor write a file it does not own, and
   execs the kernel.

Usage: ``python -I -S sandbox_init.py CONFIG_JSON -- KERNEL_ARGV...``; CONFIG_JSON holds ``workdir``, ``hide`` and
``connection_file``. Any failure stops here with exit status 3: the kernel never starts half-isolated.
"""

import json
import os
import subprocess
import sys

_KEEP_WRITABLE = ("/proc", "/sys", "/dev")


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def main(argv: list[str]) -> None:
    config, kernel = json.loads(argv[0]), argv[argv.index("--") + 1 :]
    workdir, connection = config["workdir"], config["connection_file"]
    with open(connection, "rb") as f:
        secret = f.read()
    _mount("-t", "tmpfs", "-o", "mode=0700,size=512m", "tmpfs", workdir)
    private = os.path.join(workdir, ".kernel.json")
    fd = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, secret)
    os.close(fd)
    kernel = [private if arg == connection else arg for arg in kernel]
    if os.path.isdir("/dev/shm"):
        _mount("-t", "tmpfs", "-o", "mode=1777,size=256m", "tmpfs", "/dev/shm")
    for folder in config["hide"]:
        if os.path.isdir(folder):
            _mount("-t", "tmpfs", "-o", "ro,mode=0555,size=4k", "tmpfs", folder)
        elif os.path.exists(folder):
            _mount("--bind", "/dev/null", folder)
    writable = {workdir, "/dev/shm"}
    with open("/proc/self/mountinfo") as f:
        points = sorted({line.split()[4] for line in f}, key=len)
    for point in points:
        if point in writable or point.startswith(_KEEP_WRITABLE) or point in config["hide"]:
            continue
        _mount("-o", "remount,bind,ro", point)
    os.chdir(workdir)
    os.execvp(
        "setpriv",
        [
            "setpriv",
            "--securebits",
            "+noroot,+noroot_locked,+no_setuid_fixup,+no_setuid_fixup_locked,+keep_caps_locked",
            "--bounding-set",
            "-all",
            "--inh-caps",
            "-all",
            "--ambient-caps",
            "-all",
            "--no-new-privs",
            "--",
            *kernel,
        ],
    )


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except Exception as e:  # noqa: BLE001  (any failure: say so and never start the kernel)
        detail = getattr(e, "stderr", b"") or b""
        print(f"sandbox: {type(e).__name__}: {e} {detail.decode(errors='replace').strip()}", file=sys.stderr)
        sys.exit(3)
