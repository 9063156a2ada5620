"""The box a health watch runs against, played by callables (tests of arcops.vllm.health_watch):
a script of /metrics answers and kernel lines per look, a clock, and what the watch did."""

from __future__ import annotations

from pathlib import Path

from arcops.vllm.health_watch import HealthWatch, Options

REPO = Path(__file__).resolve().parents[2]
HANG = (REPO / "tests/fixtures/journal/xe-dual-b60-hang.log").read_text().splitlines()


def metrics(running: int, generated: int) -> str:
    return (
        "# TYPE vllm:num_requests_running gauge\n"
        f'vllm:num_requests_running{{engine="0",model_name="m"}} {running}.0\n'
        f'vllm:num_requests_waiting{{engine="0",model_name="m"}} 0.0\n'
        f'vllm:generation_tokens_total{{engine="0",model_name="m"}} {generated}.0\n'
    )


class Box:
    """What the watch sees and does: a script of /metrics answers and kernel lines per look."""

    def __init__(self, answers, kernel=None):
        self.answers, self.kernel = list(answers), list(kernel or [])
        self.t = 1_000_000.0
        self.restarts: list[float] = []
        self.evidence: list[str] = []

    def fetch(self, url):
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def lines(self):
        return self.kernel.pop(0) if self.kernel else []

    def watch(self, report_dir, server="vllm", alive=None, **options) -> HealthWatch:
        return HealthWatch(
            "http://127.0.0.1:8000",
            report_dir,
            Options(**options),
            new_kernel_lines=self.lines,
            evidence=lambda where: self.evidence.append(where.name) or {"stacks": [], "devcoredumps": []},
            restart=lambda: self.restarts.append(self.t),
            fetch=self.fetch,
            monotonic=lambda: self.t,
            wall=lambda: self.t,
            server=server,
            alive=alive,
        )

    def run(self, watch: HealthWatch, looks: int, every: float) -> list[dict | None]:
        out = []
        for _ in range(looks):
            out.append(watch.step())
            self.t += every
        return out
