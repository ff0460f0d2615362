from tests.widgets.conftest import Served, served, studio  # noqa: F401
