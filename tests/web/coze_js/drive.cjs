// Calls the official Coze JavaScript SDK (@coze/api) as a user program would, and prints
// what it got as JSON, for tests/web/test_coze_js.py.
//
//   echo '[{"call": "chat.stream", "args": [{...}]}, ...]' | node drive.cjs
//
// COZE_API_BASE and COZE_API_TOKEN select the server. Each call is a method path on the
// CozeAPI client; an async iterable result (a stream) is collected into a list. Every call
// reports {"result": ...} or {"error": {name, status, code, msg, message}}.
'use strict';

const { CozeAPI } = require('@coze/api');

const client = new CozeAPI({
  baseURL: process.env.COZE_API_BASE,
  token: process.env.COZE_API_TOKEN,
});

function method(path) {
  const parts = path.split('.');
  let owner = client;
  for (const part of parts.slice(0, -1)) {
    owner = owner[part];
  }
  const fn = owner[parts[parts.length - 1]];
  if (typeof fn !== 'function') {
    throw new Error(`no SDK method ${path}`);
  }
  return fn.bind(owner);
}

async function run(call) {
  try {
    let result = method(call.call)(...(call.args || []));
    if (result && typeof result[Symbol.asyncIterator] === 'function') {
      const events = [];
      for await (const event of result) {
        events.push(event);
      }
      return { result: events };
    }
    result = await result;
    return { result: result === undefined ? null : result };
  } catch (error) {
    return {
      error: {
        name: error.name ?? null,
        status: error.status ?? null,
        code: error.code ?? null,
        msg: error.msg ?? null,
        message: error.message ?? null,
      },
    };
  }
}

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) {
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function main() {
  const calls = JSON.parse(await readStdin());
  const outcomes = [];
  for (const call of calls) {
    outcomes.push(await run(call));
  }
  process.stdout.write(JSON.stringify(outcomes));
}

main().catch(error => {
  process.stderr.write(String(error?.stack ?? error));
  process.exit(1);
});
