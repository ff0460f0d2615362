#!/usr/bin/env node
/*
 * Offline build of the prebuilt JupyterLab extension.
 *
 * `jupyter labextension build .` goes through the `jupyter_builder` Python
 * package, which resolves `@jupyterlab/core-meta` over the network. Instead we
 * call @jupyterlab/builder's script directly and give it the core metadata of
 * the JupyterLab that is installed next to the `jlpm` running this script
 * (`<site-packages>/jupyterlab/staging`).
 *
 * Core path lookup order:
 *   1. `--core-path <dir>` on the command line;
 *   2. the COZE_LAB_CORE_PATH environment variable;
 *   3. next to the running jlpm (its yarn.js is `<site-packages>/jupyter_builder/yarn.js`
 *      or, for older JupyterLab, `<site-packages>/jupyterlab/staging/yarn.js`);
 *   4. `import jupyterlab` with the Python interpreters found on PATH.
 * Other arguments (`--development`, `--watch`, `--source-map`) are passed through.
 */
'use strict';

const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const here = path.resolve(__dirname, '..');

function isCorePath(dir) {
  if (!dir) {
    return false;
  }
  try {
    const pkg = JSON.parse(
      fs.readFileSync(path.join(dir, 'package.json'), 'utf-8')
    );
    return pkg.name === '@jupyterlab/application-top';
  } catch {
    return false;
  }
}

function fromPython() {
  const candidates = [process.env.PYTHON, 'python3', 'python'].filter(Boolean);
  const code =
    'import os, jupyterlab; print(os.path.join(os.path.dirname(jupyterlab.__file__), "staging"))';
  for (const exe of candidates) {
    const res = spawnSync(exe, ['-c', code], { encoding: 'utf-8' });
    if (res.status === 0) {
      const dir = res.stdout.trim();
      if (isCorePath(dir)) {
        return dir;
      }
    }
  }
  return null;
}

/**
 * The yarn.js run by jlpm. Yarn 3 sets `npm_execpath` to a shell shim
 * (`exec node '<site-packages>/jupyter_builder/yarn.js' "$@"`); read the path from it.
 */
function jlpmScript() {
  const execpath = process.env.npm_execpath;
  if (!execpath) {
    return null;
  }
  if (/\.c?js$/.test(execpath)) {
    return execpath;
  }
  try {
    const shim = fs.readFileSync(execpath, 'utf-8').slice(0, 4096);
    const match = shim.match(/['"]([^'"]+\.c?js)['"]/);
    return match ? match[1] : null;
  } catch {
    return null;
  }
}

function findCorePath(args) {
  const i = args.indexOf('--core-path');
  if (i >= 0) {
    const dir = path.resolve(args[i + 1] || '');
    args.splice(i, 2);
    if (!isCorePath(dir)) {
      throw new Error(`--core-path ${dir} is not a JupyterLab staging folder`);
    }
    return dir;
  }
  const candidates = [process.env.COZE_LAB_CORE_PATH];
  const yarnJs = jlpmScript();
  if (yarnJs) {
    const yarnDir = path.dirname(yarnJs);
    candidates.push(yarnDir, path.join(yarnDir, '..', 'jupyterlab', 'staging'));
  }
  for (const dir of candidates) {
    if (isCorePath(dir)) {
      return path.resolve(dir);
    }
  }
  const dir = fromPython();
  if (dir) {
    return dir;
  }
  throw new Error(
    'Cannot find the JupyterLab core path (<site-packages>/jupyterlab/staging). ' +
      'Run the build with the jlpm of a Python environment that has jupyterlab, ' +
      'or pass --core-path / set COZE_LAB_CORE_PATH.'
  );
}

function main() {
  const args = process.argv.slice(2);
  let corePath;
  try {
    corePath = findCorePath(args);
  } catch (err) {
    console.error(`build-labextension: ${err.message}`);
    return 1;
  }
  const builder = require.resolve(
    '@jupyterlab/builder/lib/build-labextension.js',
    { paths: [here] }
  );
  console.log(`build-labextension: core path ${corePath}`);
  const res = spawnSync(
    process.execPath,
    [builder, '--core-path', corePath, ...args, here],
    { stdio: 'inherit' }
  );
  if (res.error) {
    console.error(res.error);
    return 1;
  }
  return res.status === null ? 1 : res.status;
}

process.exit(main());
