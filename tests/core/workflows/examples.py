"""Workflows defined at module level, as a notebook would (inspect needs real source)."""

from __future__ import annotations

import coze_lab as cl

# ---- the example, verbatim --------------------------------------------------------
wf = cl.Workflow("doc_review", description="Summarize a document and ask a person to approve it")


@wf.start
def start(doc: str, reviewer: str = "anonymous"):
    """Inputs: a document and who reviews it."""


@wf.code
def clean(doc: str) -> dict:  # runs in the sandbox, never in the kernel
    text = " ".join(doc.split())
    return {"text": text, "words": len(text.split())}


wf.llm("summarize", prompt="Summarize in one sentence: {{clean.text}}")
wf.question(
    "approve", question="Approve this summary?\n{{summarize.output}}", choices=["yes", "no"]
)
wf.end(summary="{{summarize.output}}", words="{{clean.words}}", approved="{{approve.answer}}")
DOC_REVIEW = wf

# ---- the same without a model: code, then a question --------------------------------------
review = cl.Workflow("review_no_model")


@review.start
def begin(doc: str):
    """A document."""


@review.code
def tidy(doc: str) -> dict:
    text = " ".join(doc.split())
    return {"text": text, "words": len(text.split())}


review.question("approve", question="Approve '{{tidy.text}}'?", choices=["yes", "no"])
review.end(text="{{tidy.text}}", words="{{tidy.words}}", approved="{{approve.answer}}")
REVIEW = review

# ---- two questions on parallel branches ---------------------------------------------------
parallel = cl.Workflow("two_questions")


@parallel.start
def kickoff(topic: str):
    """A topic."""


parallel.question("legal", question="Legal OK for {{kickoff.topic}}?", after="kickoff")
parallel.question("brand", question="Brand OK for {{kickoff.topic}}?", after="kickoff")
parallel.end(legal="{{legal.answer}}", brand="{{brand.answer}}", after=["legal", "brand"])
PARALLEL = parallel

# ---- failures: retry, default output, error branch, timeout -------------------------------
failing = cl.Workflow("failing")


@failing.start
def go(n: int):
    """A number."""


@failing.code(retry=2, on_error="default", default_output={"value": -1})
def flaky(n: int) -> dict:
    raise ValueError(f"bad {n}")


@failing.code(on_error="branch", after="flaky")
def broken(n: int) -> dict:
    return {"value": 1 // (n - n)}


failing.text("recovered", template="recovered from: {{broken.error}}", after="broken:error")
failing.text("fine", template="no error", after="broken")
failing.node(
    "aggregate",
    "outcome",
    inputs={"a": "{{recovered.output}}", "b": "{{fine.output}}"},
    after=["recovered", "fine"],
)
failing.end(flaky="{{flaky.value}}", outcome="{{outcome.output}}")
FAILING = failing

slow = cl.Workflow("slow")


@slow.start
def slow_start(n: int):
    """A number."""


@slow.code(timeout=1)
def spin(n: int) -> dict:
    while True:
        n += 1


slow.end(n="{{spin.n}}")
SLOW = slow

# ---- a question that may time out into a branch ----------------------------------------------
patient = cl.Workflow("patient")


@patient.start
def patient_start(item: str):
    """An item."""


patient.question("ask", question="Approve {{patient_start.item}}?", on_timeout="branch")
patient.text("approved", template="answered: {{ask.answer}}", after="ask")
patient.text("defaulted", template="no answer; defaulted", after="ask:timeout")
patient.node(
    "aggregate",
    "outcome",
    inputs={"a": "{{approved.output}}", "b": "{{defaulted.output}}"},
    after=["approved", "defaulted"],
)
patient.end(outcome="{{outcome.output}}")
PATIENT = patient

# ---- a run whose third node fails (retry from the failed node) ----------------------------
fragile = cl.Workflow("fragile_parse")


@fragile.start
def given(doc: str):
    """A document."""


fragile.llm("summarize", prompt="Summarize: {{given.doc}}")


@fragile.code
def measure(output: str) -> dict:
    return {"chars": len(output)}


@fragile.code
def parse(output: str) -> dict:
    return {"words": int(output)}  # fails: a summary is not a number


fragile.end(words="{{parse.words}}", chars="{{measure.chars}}", summary="{{summarize.output}}")
FRAGILE = fragile


def parse_fixed(output: str) -> dict:
    return {"words": len(output.split())}
