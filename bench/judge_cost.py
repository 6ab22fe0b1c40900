"""Judge cost of ragmeter vs ragas: the same cases judged by both for the four RAGAS metrics
(faithfulness, answer relevancy, context precision, context recall), both pointed at the same
local llama.cpp server through a counting proxy; prints calls and tokens per case for each,
per metric and in total, and the ragmeter/ragas ratios.

    python bench/judge_cost.py [--cases 30] [--concurrency 2] [--n-ctx 8192]

Setup, all local: ``scripts/setup_llama.py`` provides llama-cpp-python's server and
Qwen2.5-Coder-0.5B-Instruct Q4_K_M; ragas lives in its own venv (``$RAGMETER_BENCH_VENV`` or
``~/.cache/ragmeter-bench-venv``), created here from ``bench/requirements-judge-cost.txt`` (never
a dependency of ragmeter). The cases: the bundled demo's answerable cases answered by the built-in
reference pipeline, first ``--cases`` with an answer and retrieved chunks; the same question,
answer, contexts and reference go to both tools.

Each metric runs as its own pass with its own proxy tag, so calls are attributed per metric.
ragmeter: ``judges.judge_settings(http://proxy/TAG/v1#MODEL, use_cache=False, tasks=(metric,))`` and
``score_results`` on the recorded responses. ragas (legacy ``evaluate`` API, run in the venv by
this script with ``--ragas-worker``): ``Faithfulness``, ``ResponseRelevancy``,
``LLMContextPrecisionWithReference``, ``LLMContextRecall`` with default settings, the LLM a
``LangchainLLMWrapper(ChatOpenAI(...))`` on the proxy (temperature 0, dummy key), embeddings a
LangChain wrapper of ragmeter's local MiniLM ONNX embedder (no LLM call, not counted). ragas'
output-format repair calls and failed replies are counted: they are its real cost with this
judge. The server and the proxy are stopped on exit, also on error or Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
SETUP = ROOT / "scripts" / "setup_llama.py"
REQUIREMENTS = Path(__file__).resolve().parent / "requirements-judge-cost.txt"
VENV = Path(os.environ.get("RAGMETER_BENCH_VENV") or Path.home() / ".cache" / "ragmeter-bench-venv")
MODEL = "qwen2.5-coder-0.5b-instruct"
METRICS = ("faithfulness", "answer_relevancy", "context_precision", "context_recall")
RAGAS_MAX_TOKENS = 1024  # ragas sets none; bounds a looping 0.5B model (truncation is counted)
OFFLINE_ENV = {
    "RAGAS_DO_NOT_TRACK": "true",  # ragas' usage analytics would post to its server
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "OPENAI_API_KEY": "sk-dummy-local",
    "LANGCHAIN_TRACING_V2": "false",
}

if str(SRC) not in sys.path:  # run from a checkout without an (up to date) editable install
    sys.path.insert(0, str(SRC))
sys.path.insert(0, str(Path(__file__).resolve().parent))


# ----------------------------------------------------------------------------- cases


def build_cases(count: int) -> list[dict[str, Any]]:
    """The first ``count`` answerable demo cases answered by the reference pipeline."""
    from ragmeter.datasets import load_dataset
    from ragmeter.demo import DEMO_CASES, DEMO_CORPUS
    from ragmeter.models import Response
    from ragmeter.targets.reference.pipeline import ReferencePipeline

    pipeline = ReferencePipeline.from_corpus(DEMO_CORPUS)
    cases = []
    for case in load_dataset(str(DEMO_CASES)):
        if not (case.answerable and case.reference_answer):
            continue
        response = Response.model_validate(pipeline.answer(case.question))
        if not response.answer or not response.retrieved or response.abstained:
            continue
        cases.append(
            {
                "case_id": case.case_id,
                "question": case.question,
                "answer": response.answer,
                "contexts": [chunk.text for chunk in response.retrieved],
                "context_ids": [chunk.id for chunk in response.retrieved],
                "reference": case.reference_answer,
            }
        )
        if len(cases) == count:
            break
    if len(cases) < count:
        sys.exit(f"only {len(cases)} usable demo cases (asked for {count})")
    return cases


# ----------------------------------------------------------------------------- processes


def ensure_model() -> Path:
    done = subprocess.run([sys.executable, str(SETUP)], capture_output=True, text=True)
    if done.returncode == 2:
        sys.exit(f"skipped: llama-cpp-python cannot be built here: {done.stderr[-500:]}")
    if done.returncode != 0:
        sys.exit(f"scripts/setup_llama.py failed: {done.stderr[-2000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def venv_python() -> Path:
    return VENV / "bin" / "python"


def ensure_ragas_venv() -> Path:
    """The bench venv with the pinned ragas stack; reinstalled when the pins change."""
    python = venv_python()
    stamp = VENV / ".judge-cost-requirements.sha256"
    want = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    if python.exists() and stamp.exists() and stamp.read_text().strip() == want:
        return python
    if not python.exists():
        print(f"creating the ragas venv {VENV}", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    print("installing the pinned ragas stack (bench only)", file=sys.stderr, flush=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "-r", str(REQUIREMENTS)],
        check=True,
    )
    stamp.write_text(want + "\n")
    return python


@contextlib.contextmanager
def llama_server(gguf: Path, n_ctx: int, threads: int, log_path: Path) -> Iterator[str]:
    from ragmeter.judges.local import free_port

    port = free_port()
    command = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(gguf),
        "--model_alias", MODEL,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--n_ctx", str(n_ctx),
        "--n_threads", str(threads),
    ]  # fmt: skip
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            wait_ready(f"http://127.0.0.1:{port}", process, log_path)
            yield f"http://127.0.0.1:{port}"
        finally:
            stop(process)


def wait_ready(url: str, process: subprocess.Popen[bytes], log_path: Path) -> None:
    import httpx

    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"llama server exited: {log_path.read_text(errors='replace')[-1500:]}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/v1/models", timeout=2).status_code == 200:
                return
        time.sleep(0.5)
    sys.exit("llama server not ready after 180 s")


def stop(process: subprocess.Popen[Any]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# ----------------------------------------------------------------------------- ragmeter


def run_ragmeter(
    metric: str, cases: list[dict[str, Any]], proxy: Any, concurrency: int, store_dir: Path
) -> dict[str, Any]:
    from ragmeter import judges
    from ragmeter.metrics import resolve_metrics
    from ragmeter.metrics.base import MetricSettings
    from ragmeter.models import Case, CaseResult, Response, RetrievedChunk
    from ragmeter.runner.engine import score_results

    pairs = [
        (
            Case(case_id=c["case_id"], question=c["question"], reference_answer=c["reference"]),
            Response(
                answer=c["answer"],
                retrieved=[
                    RetrievedChunk(id=cid, text=text, rank=rank)
                    for rank, (cid, text) in enumerate(
                        zip(c["context_ids"], c["contexts"], strict=True), start=1
                    )
                ],
            ),
        )
        for c in cases
    ]
    judge = judges.judge_settings(
        f"{proxy.base_url(f'ragmeter.{metric}')}#{MODEL}",
        store=str(store_dir / f"{metric}.db"),  # fresh store, and no cache: every call is sent
        use_cache=False,
        concurrency=concurrency,
        tasks=(metric,),
    )
    started = time.perf_counter()
    metrics = resolve_metrics(["judged"], MetricSettings(judge=judge))
    results = [CaseResult(case_id=c.case_id, status="ok", response=r) for c, r in pairs]
    scores = score_results([c for c, _ in pairs], results, metrics)
    mine = [s for s in scores if s.metric == metric]
    values = [s.value for s in mine if s.status == "ok" and s.value is not None]
    reasons = [s.reason for s in mine if s.status != "ok" and s.reason]
    return {
        "seconds": time.perf_counter() - started,
        "scores": len(mine),
        "ok": len(values),
        "failed": sum(s.status == "failed" for s in mine),
        "skipped": sum(s.status == "skipped" for s in mine),
        "mean": sum(values) / len(values) if values else None,
        "reasons": reasons[:3],
    }


# ----------------------------------------------------------------------------- ragas (venv)


def run_ragas(
    metric: str, python: Path, cases_file: Path, proxy: Any, concurrency: int, work: Path
) -> dict[str, Any]:
    out_file = work / f"ragas-{metric}.json"
    log_file = work / f"ragas-{metric}.log"
    env = {**os.environ, **OFFLINE_ENV, "PYTHONPATH": str(SRC), "PYTHONUNBUFFERED": "1"}
    command = [
        str(python), str(Path(__file__).resolve()), "--ragas-worker",
        "--cases-file", str(cases_file),
        "--out", str(out_file),
        "--proxy", proxy.url,
        "--concurrency", str(concurrency),
        "--metric", metric,
    ]  # fmt: skip
    with log_file.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            code = process.wait()
        finally:
            stop(process)
    if code != 0 or not out_file.exists():
        tail = log_file.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"ragas worker failed ({code}):\n{tail}")
    return dict(json.loads(out_file.read_text()))


def ragas_worker(args: argparse.Namespace) -> None:
    """Runs inside the bench venv: one ragas metric on the cases, one ``evaluate``."""
    import logging
    import warnings

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    from langchain_core.embeddings import Embeddings
    from langchain_openai import ChatOpenAI
    from ragas import EvaluationDataset, RunConfig, evaluate
    from ragas.embeddings import LangchainEmbeddingsWrapper
    from ragas.llms import LangchainLLMWrapper
    from ragas.metrics import (
        Faithfulness,
        LLMContextPrecisionWithReference,
        LLMContextRecall,
        ResponseRelevancy,
    )

    from ragmeter.embedders import build_embedder

    class MiniLM(Embeddings):
        """ragmeter's local all-MiniLM-L6-v2 (ONNX) as LangChain embeddings."""

        model = "all-MiniLM-L6-v2"  # read by ragas' usage events: must be a string

        def __init__(self) -> None:
            self._embedder = build_embedder("minilm")

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return self._embedder.embed(list(texts)).tolist()

        def embed_query(self, text: str) -> list[float]:
            return self.embed_documents([text])[0]

    class Tally(logging.Handler):
        def __init__(self) -> None:
            super().__init__(logging.WARNING)
            self.records: list[str] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.records.append(f"{record.levelname} {record.name}: {record.getMessage()[:300]}")

    tally = Tally()
    logging.getLogger("ragas").addHandler(tally)

    cases = json.loads(Path(args.cases_file).read_text())
    dataset = EvaluationDataset.from_list(
        [
            {
                "user_input": c["question"],
                "response": c["answer"],
                "retrieved_contexts": c["contexts"],
                "reference": c["reference"],
            }
            for c in cases
        ]
    )
    embeddings = LangchainEmbeddingsWrapper(MiniLM())
    makers = {
        "faithfulness": Faithfulness,
        "answer_relevancy": ResponseRelevancy,
        "context_precision": LLMContextPrecisionWithReference,
        "context_recall": LLMContextRecall,
    }
    for metric in (args.metric,):
        chat = ChatOpenAI(
            model=MODEL,
            base_url=f"{args.proxy}/ragas.{metric}/v1",
            api_key="sk-dummy-local",
            temperature=0,
            max_tokens=RAGAS_MAX_TOKENS,
            timeout=1800,
        )
        # bypass_temperature: keep temperature 0 (ragas would send 0.01, or 0.3 when n > 1)
        llm = LangchainLLMWrapper(chat, bypass_temperature=True)
        scorer = makers[metric]()
        run_config = RunConfig(timeout=3600, max_workers=args.concurrency)
        tally.records.clear()
        started = time.perf_counter()
        result = evaluate(
            dataset,
            metrics=[scorer],
            llm=llm,
            embeddings=embeddings,
            run_config=run_config,
            show_progress=False,
            raise_exceptions=False,
        )
        seconds = time.perf_counter() - started
        values = [float(v) for v in result.to_pandas()[scorer.name].tolist()]
        good = [v for v in values if not math.isnan(v)]
        out = {
            "seconds": seconds,
            "ragas_name": scorer.name,
            "scores": len(values),
            "ok": len(good),
            "failed": len(values) - len(good),
            "skipped": 0,
            "mean": sum(good) / len(good) if good else None,
            "parse_errors": sum("failed to parse" in r for r in tally.records),
            "warnings": len(tally.records),
            "reasons": tally.records[:3],
        }
        print(f"ragas {metric}: {seconds:.0f} s {out}", flush=True)
    Path(args.out).write_text(json.dumps(out, indent=2))


# ----------------------------------------------------------------------------- report


def per_case(value: float, cases: int) -> str:
    return f"{value / cases:.1f}"


def render(
    n: int,
    counts: dict[str, dict[str, Any]],
    outcomes: dict[str, dict[str, dict[str, Any]]],
) -> str:
    done = [m for m in METRICS if m in outcomes["ragmeter"] and m in outcomes["ragas"]]
    label = "all four" if len(done) == len(METRICS) else "all measured"

    def row(tool: str, metrics: tuple[str, ...]) -> dict[str, Any]:
        c = [counts.get(f"{tool}.{m}", {}) for m in metrics]
        o = [outcomes[tool][m] for m in metrics]
        return {
            "calls": sum(x.get("chat_requests", 0) for x in c),
            "rejected": sum(
                v for x in c for code, v in x.get("statuses", {}).items() if code != "200"
            ),
            "prompt": sum(x.get("prompt_tokens", 0) for x in c),
            "completion": sum(x.get("completion_tokens", 0) for x in c),
            "failed": sum(x["failed"] + x["skipped"] for x in o),
            "scores": sum(x["scores"] for x in o),
            "seconds": sum(x["seconds"] for x in o),
        }

    def ratio(x: float, y: float) -> str:
        return f"{x / y:.2f}" if y else "-"

    lines = [
        "| metric | tool | calls/case | prompt tok/case | completion tok/case | "
        "total tok/case | non-200 replies | failed or NaN scores | wall s |",
        "|" + "---|" * 9,
    ]
    ratios = []
    for metric in (*done, label):
        metrics = tuple(done) if metric == label else (metric,)
        rows = {tool: row(tool, metrics) for tool in ("ragmeter", "ragas")}
        bold = "**" if metric == label else ""
        for tool, r in rows.items():
            lines.append(
                f"| {bold}{metric}{bold} | {tool} | {per_case(r['calls'], n)} | "
                f"{per_case(r['prompt'], n)} | {per_case(r['completion'], n)} | "
                f"{bold}{per_case(r['prompt'] + r['completion'], n)}{bold} | {r['rejected']} | "
                f"{r['failed']}/{r['scores']} | {r['seconds']:.0f} |"
            )
        a, b = rows["ragmeter"], rows["ragas"]
        ratios.append(
            f"| {bold}{metric}{bold} | {ratio(a['calls'], b['calls'])} | "
            f"{ratio(a['prompt'], b['prompt'])} | {ratio(a['completion'], b['completion'])} | "
            f"{bold}{ratio(a['prompt'] + a['completion'], b['prompt'] + b['completion'])}{bold} |"
        )
    lines += [
        "",
        "ragmeter / ragas:",
        "",
        "| metric | calls | prompt tokens | completion tokens | total tokens |",
        "|---|---|---|---|---|",
        *ratios,
    ]
    return "\n".join(lines)


def report(
    n: int,
    counts: dict[str, dict[str, Any]],
    outcomes: dict[str, dict[str, dict[str, Any]]],
    header: str,
) -> str:
    lines = [header, "", render(n, counts, outcomes), "", "proxy counters per tag:"]
    for tag, c in counts.items():
        lines.append(
            f"  {tag}: {c['chat_requests']} chat calls, statuses {c['statuses']}, "
            f"no usage {c['no_usage']}, finish {c['finish_reasons']}, n {c['n_requested']}, "
            f"{c['seconds']:.0f} s upstream"
        )
    lines.append("\nscore outcomes:")
    for tool, per_metric in outcomes.items():
        for metric, o in per_metric.items():
            mean = "-" if o.get("mean") is None else f"{o['mean']:.3f}"
            extra = f", parse errors {o['parse_errors']}" if "parse_errors" in o else ""
            lines.append(
                f"  {tool} {metric}: ok {o['ok']}/{o['scores']}, failed/NaN {o['failed']}, "
                f"skipped {o['skipped']}, mean {mean}{extra}"
            )
            lines += [f"      e.g. {reason[:240]}" for reason in o.get("reasons", [])[:2]]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=30)
    parser.add_argument(
        "--concurrency", type=int, default=2, help="in-flight judge calls, each tool"
    )
    parser.add_argument("--n-ctx", type=int, default=8192, help="llama.cpp context size")
    parser.add_argument("--threads", type=int, default=2, help="llama.cpp threads")
    parser.add_argument(
        "--metrics", default=",".join(METRICS), help="comma-separated subset, run in this order"
    )
    parser.add_argument("--json", type=Path, help="write counters and outcomes here (each step)")
    parser.add_argument("--ragas-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--metric", help=argparse.SUPPRESS)
    parser.add_argument("--cases-file", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--proxy", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.ragas_worker:
        ragas_worker(args)
        return
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    if not metrics or set(metrics) - set(METRICS):
        parser.error(f"--metrics: a subset of {','.join(METRICS)}")
    # SIGTERM ends the run like Ctrl-C, so the finally blocks stop the server and the proxy
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    from counting_proxy import CountingProxy

    started = time.perf_counter()
    gguf = ensure_model()
    python = ensure_ragas_venv()
    ragas_version = subprocess.run(
        [str(python), "-c", "import ragas; print(ragas.__version__)"],
        capture_output=True,
        text=True,
        env={**os.environ, **OFFLINE_ENV},
    ).stdout.strip()
    cases = build_cases(args.cases)
    outcomes: dict[str, dict[str, dict[str, Any]]] = {"ragmeter": {}, "ragas": {}}
    counts: dict[str, dict[str, Any]] = {}

    def header() -> str:
        return (
            f"judge cost: {len(cases)} cases, Qwen2.5-Coder-0.5B-Instruct Q4_K_M on llama.cpp "
            f"(n_ctx {args.n_ctx}, {args.threads} threads), concurrency {args.concurrency}, "
            f"ragas {ragas_version}; {(time.perf_counter() - started) / 60:.1f} min so far"
        )

    with tempfile.TemporaryDirectory(prefix="judge-cost-") as folder:
        work = Path(folder)
        cases_file = work / "cases.json"
        cases_file.write_text(json.dumps(cases))
        with (
            llama_server(gguf, args.n_ctx, args.threads, work / "llama.log") as upstream,
            CountingProxy(upstream) as proxy,
        ):
            for metric in metrics:  # each metric: ragmeter, then ragas (same server state)
                print(f"{metric}: ragmeter on {len(cases)} cases", file=sys.stderr, flush=True)
                outcomes["ragmeter"][metric] = run_ragmeter(
                    metric, cases, proxy, args.concurrency, work
                )
                print(f"{metric}: ragas on {len(cases)} cases", file=sys.stderr, flush=True)
                outcomes["ragas"][metric] = run_ragas(
                    metric, python, cases_file, proxy, args.concurrency, work
                )
                counts = proxy.snapshot()
                print(render(len(cases), counts, outcomes), file=sys.stderr, flush=True)
                if args.json:
                    args.json.write_text(
                        json.dumps(
                            {
                                "cases": len(cases),
                                "ragas": ragas_version,
                                "minutes": (time.perf_counter() - started) / 60,
                                "counts": counts,
                                "outcomes": outcomes,
                            },
                            indent=2,
                        )
                    )
    print(report(len(cases), counts, outcomes, header().replace("so far", "in all")))


if __name__ == "__main__":
    main()
