"""The notebook layer: what a notebook uses, above the services (``cl.connect()``,
``cl.Bot``, ``cl.Plugin``, ``cl.Workflow``'s ``run``/``run_local``/``publish``, ``cl.runs``).

Every call that touches server state goes through one transport, the studio API client
(:class:`~coze_lab.notebook.studio.Studio`); the in-process host serves only explicit
``wf.run_local`` and tests.
"""
