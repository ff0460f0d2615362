"""Workflows with sub-workflows, loops and batches (module level: code nodes need source)."""

from __future__ import annotations

import coze_lab as cl

# ---- a sub-workflow that asks a question -----------------------------------------------------
ask = cl.Workflow("ask")


@ask.start
def ask_start(topic: str):
    """A topic."""


ask.question("opinion", question="What do you think of {{ask_start.topic}}?")
ask.end(answer="{{opinion.answer}}")

outer = cl.Workflow("outer")


@outer.start
def outer_start(topic: str):
    """A topic."""


outer.subworkflow("sub", workflow=ask, inputs={"topic": "{{outer_start.topic}}"})
outer.text("reply", template="you said: {{sub.answer}}")
outer.end(reply="{{reply.output}}")
OUTER = outer

# ---- a loop whose body runs code and carries a running total ----------------------------------
add = cl.Workflow("add")


@add.start
def add_start(item: int, index: int, total: int):
    """One number."""


@add.code
def step(item: int, total: int) -> dict:
    return {"doubled": item * 2, "total": total + item}


add.end(doubled="{{step.doubled}}", total="{{step.total}}")

summing = cl.Workflow("summing")


@summing.start
def numbers_start(numbers: list):
    """Numbers."""


summing.loop("each", body=add, over="{{numbers_start.numbers}}", variables={"total": 0})
summing.end(results="{{each.results}}", total="{{each.total}}", count="{{each.count}}")
SUMMING = summing

# ---- a counted loop that breaks -----------------------------------------------------------------
until = cl.Workflow("until")


@until.start
def until_start(index: int):
    """The iteration."""


@until.code
def check(index: int) -> dict:
    return {"i": index, "stop": index >= 2}


until.end(i="{{check.i}}", **{"break": "{{check.stop}}"})

counted = cl.Workflow("counted")


@counted.start
def counted_start(limit: int):
    """Unused."""


counted.loop("tries", body=until, count=10)
counted.end(results="{{tries.results}}", count="{{tries.count}}")
COUNTED = counted

# ---- a batch of text bodies -----------------------------------------------------------------------
shout = cl.Workflow("shout")


@shout.start
def shout_start(item: str, index: int, suffix: str):
    """A word."""


shout.text("loud", template="{{shout_start.index}}:{{shout_start.item}}{{shout_start.suffix}}")
shout.end(text="{{loud.output}}")

batched = cl.Workflow("batched")


@batched.start
def batched_start(words: list):
    """Words."""


batched.batch("all", body=shout, over="{{batched_start.words}}", concurrency=2,
              inputs={"suffix": "!"})
batched.end(results="{{all.results}}")
BATCHED = batched

# ---- a loop whose body asks a question per item ----------------------------------------------------
confirm = cl.Workflow("confirm")


@confirm.start
def confirm_start(item: str):
    """An item."""


confirm.question("ok", question="Keep {{confirm_start.item}}?", choices=["keep", "drop"])
confirm.end(item="{{confirm_start.item}}", decision="{{ok.answer}}")

reviewing = cl.Workflow("reviewing")


@reviewing.start
def reviewing_start(items: list):
    """Items."""


reviewing.loop("each", body=confirm, over="{{reviewing_start.items}}")
reviewing.end(results="{{each.results}}")
REVIEWING = reviewing

# ---- a loop body with continue (the item 3) and break (a negative item) --------------------------
pick = cl.Workflow("pick")


@pick.start
def pick_start(item: int, total: int):
    """One number."""


pick.condition("route", branches=[
    {"port": "stop", "when": [{"left": "{{pick_start.item}}", "op": "<", "right": 0}]},
    {"port": "three", "when": [{"left": "{{pick_start.item}}", "op": "==", "right": 3}]},
])
pick.break_loop("stop", after="route:stop")
pick.continue_loop("skip", after="route:three")


@pick.code(after="route:else")
def keep(item: int, total: int) -> dict:
    return {"total": total + item}


pick.end(item="{{pick_start.item}}", total="{{keep.total}}")

picking = cl.Workflow("picking")


@picking.start
def picking_start(numbers: list):
    """Numbers."""


picking.loop("each", body=pick, over="{{picking_start.numbers}}", variables={"total": 0})
picking.end(results="{{each.results}}", total="{{each.total}}", count="{{each.count}}")
PICKING = picking
