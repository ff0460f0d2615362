// Builds the Pyodide memory snapshot that every worker starts from (install time only:
// this is the only Deno process that may write into the cache directory).
import { loadPyodide } from "npm:pyodide@__PYODIDE_VERSION__";
const [outPath, preload] = Deno.args;
const pyodide = await loadPyodide({ _makeSnapshot: true, env: { HOME: "/home/pyodide" } });
pyodide.runPython(`import importlib\nfor _m in ${JSON.stringify(preload)}.split(","):\n    importlib.import_module(_m)\ndel _m, importlib`);
await Deno.writeFile(outPath, pyodide.makeMemorySnapshot());
