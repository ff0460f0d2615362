"""The notebook DSL: decorators and calls that build a ``WorkflowSpec``.

Example:
    >>> wf = Workflow("greet")
    >>> @wf.start
    ... def start(name: str): ...
    >>> wf.text("hello", template="Hello {{start.name}}!")
    'hello'
    >>> wf.end(greeting="{{hello.output}}")
    'end'
    >>> [n.id for n in wf.spec().nodes]
    ['start', 'hello', 'end']
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

from coze_lab.core.workflows.nodes import NODE_TYPES
from coze_lab.core.workflows.spec import (
    Edge,
    ErrorPolicy,
    InputSpec,
    NodeSpec,
    WorkflowDefinitionError,
    WorkflowSpec,
    whole_reference,
)
from coze_lab.core.workflows.validate import validate

_PY_TYPES = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    dict: "object",
    list: "array",
}
_NAMED_TYPES = {
    "str": "string",
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "dict": "object",
    "list": "array",
}


def type_name(annotation: Any) -> str:
    """The workflow type of a Python annotation (``any`` when unknown)."""
    if annotation is inspect.Parameter.empty:
        return "any"
    if isinstance(annotation, str):
        return _NAMED_TYPES.get(annotation.split("[")[0].strip(), "any")
    origin = getattr(annotation, "__origin__", None)
    return _PY_TYPES.get(origin or annotation, "any")


class Workflow:
    """A workflow under construction; nodes chain in declaration order.

    Running and publishing belong to the notebook layer (``cl.Workflow``, which adds
    ``run``, ``run_local`` and ``publish``).
    """

    def __init__(self, name: str, *, description: str = "") -> None:
        self.name = name
        self.description = description
        self._inputs: list[InputSpec] = []
        self._nodes: list[NodeSpec] = []
        self._edges: list[Edge] = []
        self._tail: list[tuple[str, str | None]] = []

    # ---- building -----------------------------------------------------------------------
    def add(
        self,
        node: NodeSpec,
        *,
        after: str | Sequence[str] | None = None,
        port: str | None = None,
    ) -> str:
        """Append ``node``; connect it after ``after`` (default: the previous node)."""
        if any(existing.id == node.id for existing in self._nodes):
            raise WorkflowDefinitionError("a node with this id exists already", node.id)
        kind = NODE_TYPES.get(node.type)
        if kind is None:
            raise WorkflowDefinitionError(f"unknown node type '{node.type}'", node.id)
        node.error.check(node.id)
        kind.check(node)
        sources = self._sources(after, port)
        if node.type == "start" and self._nodes:
            raise WorkflowDefinitionError("the start node comes first", node.id)
        if node.type != "start" and not sources:
            raise WorkflowDefinitionError("define the start node first", node.id)
        nodes = [*self._nodes, node]
        edges = [*self._edges, *(Edge(src, node.id, p) for src, p in sources)]
        # reference and type errors surface here, before the node is kept
        validate(
            WorkflowSpec(
                self.name, self.description, tuple(self._inputs), tuple(nodes), tuple(edges)
            ),
            complete=False,
        )
        self._nodes, self._edges = nodes, edges
        self._tail = [(node.id, None)]
        return node.id

    def _sources(
        self, after: str | Sequence[str] | None, port: str | None
    ) -> list[tuple[str, str | None]]:
        if after is None:
            return [(src, port or p) for src, p in self._tail]
        names = [after] if isinstance(after, str) else list(after)
        sources = []
        for name in names:
            source, _, named_port = name.partition(":")
            if not any(n.id == source for n in self._nodes):
                raise WorkflowDefinitionError(f"after= names unknown node '{source}'")
            sources.append((source, named_port or port))
        return sources

    def start(self, func: Callable[..., Any]) -> Callable[..., Any]:
        """Decorator: the function's parameters are the workflow's inputs."""
        inputs = []
        for param in inspect.signature(func).parameters.values():
            required = param.default is inspect.Parameter.empty
            inputs.append(
                InputSpec(
                    name=param.name,
                    type=type_name(param.annotation),
                    required=required,
                    default=None if required else param.default,
                )
            )
        self.add(
            NodeSpec(
                id=func.__name__,
                type="start",
                title=func.__name__,
                outputs={i.name: i.type for i in inputs},
                config={"description": inspect.getdoc(func) or ""},
            )
        )
        self._inputs = inputs
        return func

    def inputs(self, node_id: str = "start", **params: Any) -> str:
        """The start node without a function: ``wf.inputs(city=str, days=(int, 3))``.

        A value is a type (a required input) or a ``(type, default)`` pair.
        """
        specs = []
        for name, value in params.items():
            kind, default, required = value, None, True
            if isinstance(value, tuple):
                kind, default, required = value[0], value[1], False
            specs.append(
                InputSpec(name=name, type=type_name(kind), required=required, default=default)
            )
        self.add(
            NodeSpec(
                id=node_id, type="start", title=node_id, outputs={i.name: i.type for i in specs}
            )
        )
        self._inputs = specs
        return node_id

    def code(
        self,
        func: Callable[..., Any] | None = None,
        *,
        inputs: dict[str, Any] | None = None,
        outputs: dict[str, Any] | None = None,
        after: str | Sequence[str] | None = None,
        **error: Any,
    ) -> Any:
        """Decorator: a Python function that runs in the sandbox, never in the kernel.

        Parameters bind by name to upstream outputs (nearest first) and workflow inputs,
        unless ``inputs=`` binds them explicitly. Outputs are the keys of the returned dict
        literal, or ``outputs=``.
        """

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            source = _function_source(fn)
            params = inspect.signature(fn).parameters.values()
            bound = dict(inputs or {})
            for param in params:
                if param.name not in bound:
                    bound[param.name] = self._bind_by_name(fn.__name__, param.name, after)
            declared = {
                k: type_name(v) if not isinstance(v, str) else v for k, v in (outputs or {}).items()
            } or _returned_keys(source)
            self.add(
                NodeSpec(
                    id=fn.__name__,
                    type="code",
                    title=fn.__name__,
                    inputs=bound,
                    outputs=declared,
                    config={
                        "language": "python",
                        "code": source,
                        "entry": fn.__name__,
                        "params": {p.name: type_name(p.annotation) for p in params},
                    },
                    error=ErrorPolicy(**error),
                ),
                after=after,
            )
            return fn

        return register(func) if func is not None else register

    def _bind_by_name(self, node_id: str, name: str, after: Any) -> str:
        for node in reversed(self._nodes):
            if name in node.outputs:
                return f"{{{{{node.id}.{name}}}}}"
        raise WorkflowDefinitionError(
            f"parameter '{name}' matches no workflow input or upstream output; "
            "bind it with inputs={...}",
            node_id,
        )

    def node(
        self,
        node_type: str,
        node_id: str,
        *,
        title: str = "",
        inputs: dict[str, Any] | None = None,
        after: str | Sequence[str] | None = None,
        port: str | None = None,
        retry: int = 0,
        timeout: float | None = None,
        on_error: str = "fail",
        default_output: dict[str, Any] | None = None,
        **config: Any,
    ) -> str:
        """Any node type by name: ``wf.node("http", "fetch", url=..., method="GET")``."""
        kind = NODE_TYPES.get(node_type)
        if kind is None:
            raise WorkflowDefinitionError(f"unknown node type '{node_type}'", node_id)
        spec = NodeSpec(
            id=node_id,
            type=node_type,
            title=title or node_id,
            inputs=dict(inputs or {}),
            config=config,
            error=ErrorPolicy(retry, timeout, on_error, default_output),
        )
        spec = NodeSpec(**{**spec.__dict__, "outputs": kind.outputs(spec)})
        return self.add(spec, after=after, port=port)

    def llm(self, node_id: str, *, prompt: str, **kwargs: Any) -> str:
        return self.node("llm", node_id, prompt=prompt, **kwargs)

    def question(self, node_id: str, *, question: str, **kwargs: Any) -> str:
        return self.node("question", node_id, question=question, **kwargs)

    def input(self, node_id: str, *, form: dict[str, Any], **kwargs: Any) -> str:
        return self.node("input", node_id, form=form, **kwargs)

    def text(self, node_id: str, *, template: str, **kwargs: Any) -> str:
        return self.node("text", node_id, template=template, **kwargs)

    def condition(self, node_id: str, *, branches: list[dict[str, Any]], **kwargs: Any) -> str:
        return self.node("condition", node_id, branches=branches, **kwargs)

    def message(self, node_id: str, *, content: str, **kwargs: Any) -> str:
        return self.node("message", node_id, content=content, **kwargs)

    def database(self, node_id: str, *, table: Any = None, operation: str, **kwargs: Any) -> str:
        """Read or change a user table (``table``: its name, a TableInfo or a ``cl.Table``;
        ``operation="nl"`` may name several as ``tables=[...]``).

        Example:
            >>> wf.database("recent", table="orders", operation="query",
            ...             where=[{"field": "customer", "op": "==", "value": "{{start.name}}"}],
            ...             order_by=[{"field": "id", "desc": True}], limit=5)  # doctest: +SKIP
            >>> wf.database("total", table="orders", operation="sql",
            ...             sql="SELECT sum(amount) AS total FROM orders "
            ...                 "WHERE customer = {{start.name}}")          # doctest: +SKIP
        """
        if table is not None:
            kwargs["table"] = str(getattr(table, "name", table))
        if isinstance(kwargs.get("tables"), list | tuple):
            kwargs["tables"] = [str(getattr(t, "name", t)) for t in kwargs["tables"]]
        return self.node("database", node_id, operation=operation, **kwargs)

    def knowledge(
        self,
        node_id: str,
        *,
        datasets: Any,
        query: str,
        top_k: int = 5,
        min_score: float = 0.0,
        **kwargs: Any,
    ) -> str:
        """Recall chunks from knowledge bases (``datasets``: ids or ``cl.Knowledge`` objects);
        outputs ``chunks`` (with their source) and ``output`` (their text).

        Example:
            >>> wf.knowledge("recall", datasets=[kb], query="{{start.question}}")  # doctest: +SKIP
        """
        items = datasets if isinstance(datasets, list | tuple) else [datasets]
        ids = [str(getattr(d, "id", d)) for d in items]
        return self.node(
            "knowledge",
            node_id,
            dataset_ids=ids,
            query=query,
            top_k=top_k,
            min_score=min_score,
            **kwargs,
        )

    def plugin(self, node_id: str, *, plugin: Any, tool: str, **kwargs: Any) -> str:
        """Call a plugin tool; ``inputs=`` are its arguments, ``plugin`` a Plugin or its id.

        Example:
            >>> wf.plugin("weather", plugin=weather, tool="get_weather",
            ...           inputs={"city": "{{start.city}}"})   # doctest: +SKIP
        """
        plugin_id = getattr(plugin, "id", plugin)
        return self.node("plugin", node_id, plugin_id=str(plugin_id), tool=tool, **kwargs)

    def mcp(self, node_id: str, *, server: Any, tool: str, **kwargs: Any) -> str:
        """Call a tool of an MCP server of the space; ``inputs=`` are its arguments,
        ``server`` the server's id (or anything with an ``id``).

        Example:
            >>> wf.mcp("sum", server=calc_id, tool="add",
            ...        inputs={"a": "{{start.a}}", "b": 2})     # doctest: +SKIP
        """
        server_id = getattr(server, "id", server)
        return self.node("mcp", node_id, server_id=str(server_id), tool=tool, **kwargs)

    def subworkflow(
        self, node_id: str, *, workflow: Workflow | dict[str, Any], **kwargs: Any
    ) -> str:
        """Run another workflow (a ``Workflow`` or its JSON) with ``inputs=``."""
        return self.node("subworkflow", node_id, definition=_definition(workflow), **kwargs)

    def loop(
        self,
        node_id: str,
        *,
        body: Workflow | dict[str, Any],
        over: str | None = None,
        count: int | None = None,
        variables: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> str:
        """Run ``body`` per item of ``over`` (a reference to an array) or ``count`` times."""
        node_inputs = dict(inputs or {})
        if over is not None:
            node_inputs["over"] = over
        config: dict[str, Any] = {"definition": _definition(body)}
        if count is not None:
            config["count"] = count
        if variables:
            config["variables"] = variables
        return self.node("loop", node_id, inputs=node_inputs, **config, **kwargs)

    def break_loop(self, node_id: str = "break", **kwargs: Any) -> str:
        """In a loop body: end the loop when this node is reached (Coze's break node).

        Example:
            >>> body.condition("done", branches=[...])                  # doctest: +SKIP
            >>> body.break_loop("stop", after="done:true")              # doctest: +SKIP
        """
        return self.node("break", node_id, **kwargs)

    def continue_loop(self, node_id: str = "continue", **kwargs: Any) -> str:
        """In a loop body: end this iteration here and go on with the next one (Coze's
        continue node); the iteration adds nothing to ``results``.

        Example:
            >>> body.continue_loop("skip", after="odd:true")            # doctest: +SKIP
        """
        return self.node("continue", node_id, **kwargs)

    def batch(
        self,
        node_id: str,
        *,
        body: Workflow | dict[str, Any],
        over: str,
        concurrency: int = 4,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> str:
        """Run ``body`` for every item of ``over`` in parallel (``concurrency`` at a time)."""
        return self.node(
            "batch",
            node_id,
            inputs={**(inputs or {}), "over": over},
            definition=_definition(body),
            concurrency=concurrency,
            **kwargs,
        )

    def end(
        self,
        *,
        after: str | Sequence[str] | None = None,
        answer_template: str | None = None,
        node_id: str = "end",
        **outputs: Any,
    ) -> str:
        """The end node: its keyword arguments (templates) become the run's outputs.

        ``answer_template`` (e.g. ``"Done: {{x.y}}"``) is streamed as the final message
        instead of the outputs as JSON.
        """
        config = {"answer": answer_template} if answer_template is not None else {}
        return self.node("end", node_id, inputs=outputs, after=after, **config)

    # ---- results ------------------------------------------------------------------------
    def spec(self) -> WorkflowSpec:
        return WorkflowSpec(
            self.name, self.description, tuple(self._inputs), tuple(self._nodes), tuple(self._edges)
        )

    def validate(self) -> WorkflowSpec:
        """The complete definition, checked (an end node reachable, and so on)."""
        spec = self.spec()
        validate(spec, complete=True)
        return spec

    def to_json(self) -> dict[str, Any]:
        """The canonical JSON (a dict) that is stored, published and diffed."""
        return self.validate().to_dict()

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Workflow:
        """Rebuild from ``to_json()`` output; ``Workflow.from_json(d).to_json() == d``."""
        spec = WorkflowSpec.from_dict(data)
        validate(spec, complete=True)
        wf = cls(spec.name, description=spec.description)
        wf._inputs = list(spec.inputs)
        wf._nodes = list(spec.nodes)
        wf._edges = list(spec.edges)
        wf._tail = [(spec.nodes[-1].id, None)] if spec.nodes else []
        return wf

    def _repr_markdown_(self) -> str:
        from coze_lab.core.workflows.mermaid import mermaid

        return "```mermaid\n" + mermaid(self.spec()) + "\n```"

    def __repr__(self) -> str:
        return f"Workflow({self.name!r}, nodes={[n.id for n in self._nodes]})"


def _definition(workflow: Workflow | dict[str, Any]) -> dict[str, Any]:
    return workflow.to_json() if isinstance(workflow, Workflow) else dict(workflow)


def code_change(func: Callable[..., Any] | str) -> dict[str, Any]:
    """A code node's new code, from a function (its source and name) or source text: the
    ``code`` (and ``entry``) keys of a retry's node change."""
    if isinstance(func, str):
        return {"code": func}
    return {"code": _function_source(func), "entry": func.__name__}


def retry_changes(from_node: str | None, changes: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``run.retry(from_node, code=fixed, prompt=...)``'s keywords as the ``node_changes`` of
    a retry: ``code`` may be a function (its source and name are sent)."""
    if not changes:
        return {}
    if from_node is None:
        raise TypeError("changing a node needs from_node=...: the node to run again")
    change = dict(changes)
    if "code" in change:
        change.update(code_change(change.pop("code")))
    return {from_node: change}


def _function_source(func: Callable[..., Any]) -> str:
    try:
        source = textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError) as exc:
        raise WorkflowDefinitionError(
            "cannot read the function's source (define it in a notebook cell or a file)",
            func.__name__,
        ) from exc
    tree = ast.parse(source)
    fn = tree.body[0]
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise WorkflowDefinitionError("a code node is a plain function", func.__name__)
    fn.decorator_list = []
    return ast.unparse(fn) + "\n"


def _returned_keys(source: str) -> dict[str, str]:
    """Output names from ``return {"a": ..., "b": ...}`` statements."""
    keys: dict[str, str] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Dict):
            for key in node.value.keys:
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    keys[key.value] = "any"
    return keys


__all__ = ["Workflow", "type_name", "whole_reference"]
