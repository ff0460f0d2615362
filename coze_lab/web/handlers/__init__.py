"""Handler mixins, one module per area; ``coze_lab.web.routes`` binds and mounts them."""
