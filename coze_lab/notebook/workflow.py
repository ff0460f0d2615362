"""``cl.Workflow``: the DSL of ``coze_lab.core.workflows`` plus running and publishing.

``wf.publish()`` and ``wf.run()`` go to the server ``cl.connect()`` found (the notebook's
one transport); ``wf.run_local()`` runs in-process, explicitly, with the same engine.
"""

from __future__ import annotations

from typing import Any

from coze_lab.core.workflows.dsl import Workflow as WorkflowDefinition


class Workflow(WorkflowDefinition):
    """A workflow defined in a notebook (see ``coze_lab.core.workflows.dsl.Workflow``).

    Example:
        >>> wf = Workflow("greet")
        >>> wf.inputs(name=str)
        'start'
        >>> wf.text("hello", template="Hello {{start.name}}!")
        'hello'
        >>> wf.end(greeting="{{hello.output}}")
        'end'
        >>> wf.run_local(name="Ada").outputs      # doctest: +SKIP
        {'greeting': 'Hello Ada!'}
    """

    def run_local(self, **inputs: Any) -> Any:
        """Run in-process with the same engine and store as the server; returns a LocalRun.

        The run stops when it finishes or waits for a person: ``run.pending`` lists the
        questions, ``run.resume(event_id, answer)`` continues it.
        """
        from coze_lab.notebook.in_process import default_host

        return default_host().run(self.validate(), inputs)

    def publish(self, *, space: str | int | None = None) -> dict[str, Any]:
        """Save this definition as the stored workflow's draft and publish it on the server
        ``cl.connect()`` found, in ``space`` (a team space's name or id; default: the
        connection's space); the result names the workflow id (the ``workflow_id`` of the
        Coze API) and the new version number.
        """
        from coze_lab.notebook.connect import in_space

        saved = in_space(None, space).save_workflow(self.to_json(), publish=True)
        return {
            "workflow_id": saved["id"],
            "version": saved["published_version"],
            "name": saved["name"],
        }

    def run(self, **inputs: Any) -> Any:
        """Run this definition on the server and return a live run widget at once.

        The server found by ``cl.connect()`` (the lab's own, with no configuration) saves
        the definition as the draft and executes it: the run survives kernel restarts,
        and re-displaying ``cl.connect().run(run.id)`` reconnects to it.

        >>> run = wf.run(doc="Hello world")     # doctest: +SKIP
        >>> run.resume("yes")                    # doctest: +SKIP  (or answer in the widget)
        """
        from coze_lab.notebook.connect import current
        from coze_lab.notebook.widgets import RunWidget

        studio = current()
        definition = self.to_json()
        saved = studio.save_workflow(definition)
        run_id = studio.start_run(saved["id"], inputs)
        return RunWidget(run_id, studio=studio, definition=definition)

