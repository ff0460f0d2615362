// Fetched once by `deno cache` (coze-lab sandbox install) so later runs are offline.
import "npm:pyodide@__PYODIDE_VERSION__";
