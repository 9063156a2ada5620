"""Log lines in vLLM's formats (its logger behind decorate_logs, uvicorn's), one write per line."""

import os
import time

from standin_plan import SHARDS

CYAN, RESET = "\033[1;36m", "\033[0;0m"

# ---------------------------------------------------------------- logging in vLLM's formats


def write(fd: int, text: str) -> None:
    data = text.encode()
    try:
        while data:  # one write per call keeps lines from different processes whole
            data = data[os.write(fd, data) :]
    except OSError:
        pass


def _coloured(fd: int) -> bool:
    colour = os.environ.get("VLLM_LOGGING_COLOR", "")
    if os.environ.get("NO_COLOR") or colour == "0":
        return False
    return colour == "1" or os.isatty(fd)


class Log:
    """vLLM's logger with decorate_logs(): '(NAME pid=N) LEVEL mm-dd HH:MM:SS [file.py:line] msg'."""

    def __init__(self, process_name: str):
        self.name = process_name

    def prefix(self, fd: int) -> str:
        tag = f"({self.name} pid={os.getpid()})"
        return f"{CYAN}{tag}{RESET} " if _coloured(fd) else f"{tag} "

    def raw(self, text: str, fd: int = 1) -> None:
        prefix = self.prefix(fd)
        write(fd, "".join(f"{prefix}{line}\n" for line in text.split("\n")))

    def log(self, level: str, where: str, message: str) -> None:
        head = f"{level} {time.strftime('%m-%d %H:%M:%S')} [{where}] "
        self.raw("\n".join(head + line for line in message.split("\n")))

    def info(self, where: str, message: str) -> None:
        self.log("INFO", where, message)

    def error(self, where: str, message: str) -> None:
        self.log("ERROR", where, message)

    def uvicorn(self, message: str, fd: int = 2) -> None:
        """uvicorn's default formatter: level prefix padded to 9 columns ('INFO:     ...')."""
        self.raw(f"INFO:     {message}", fd)


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes:02d}:{secs:02d}"


def shard_progress(done: int, started: float) -> str:
    """vLLM's tqdm bar for safetensors shards, as the first local rank prints it (stderr, no prefix)."""
    line = f"Loading safetensors checkpoint shards: {100 * done / SHARDS:3.0f}% Completed | {done}/{SHARDS} "
    elapsed = time.monotonic() - started
    if done == 0 or elapsed <= 0:
        return line + "[00:00<?, ?it/s]"
    rate = done / elapsed
    speed = f"{rate:5.2f}it/s" if rate >= 1 else f"{1 / rate:5.2f}s/it"
    return line + f"[{_clock(elapsed)}<{_clock((SHARDS - done) / rate)}, {speed}]"
