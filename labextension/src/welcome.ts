/**
 * The notebook the Launcher's Coze Lab tile opens: `00_welcome.ipynb` when the server's
 * root has it (`make lab` serves the repository's notebooks/), else a short one written
 * next to it on first use.
 */
import { Contents } from '@jupyterlab/services';

export const WELCOME_NOTEBOOKS = ['00_welcome.ipynb', 'coze_lab_welcome.ipynb'];

const markdown = (source: string) => ({ cell_type: 'markdown', metadata: {}, source });
const code = (source: string) => ({
  cell_type: 'code',
  metadata: {},
  source,
  outputs: [],
  execution_count: null
});

/** A short first notebook: connect, a workflow that asks a question, where to read on. */
export function shortWelcomeNotebook(): Record<string, unknown> {
  return {
    nbformat: 4,
    nbformat_minor: 5,
    metadata: {
      kernelspec: { name: 'python3', display_name: 'Python 3', language: 'python' }
    },
    cells: [
      markdown(
        '# Welcome to Coze Lab\n\n' +
          'Workflows, bots and the Coze API in JupyterLab. The **Coze Lab** sidebar ' +
          '(the chat-bubble icon on the left) lists your workflows, runs, questions ' +
          'waiting for you, bots and access tokens.\n\n' +
          'Run the cells: a workflow with a sandboxed code node asks you a question; ' +
          'answer it in the widget or in the sidebar.'
      ),
      code(
        'import coze_lab as cl\n\n' +
          'studio = cl.connect()  # this Jupyter server\n' +
          'studio.me()'
      ),
      code(
        "wf = cl.Workflow('hello')\n" +
          'wf.inputs(text=str)\n\n' +
          '@wf.code\n' +
          'def count(text: str) -> dict:  # runs in the sandbox, not in this kernel\n' +
          "    return {'words': len(text.split())}\n\n" +
          "wf.question('ok', question='{{count.words}} words. Keep going?', choices=['yes', 'no'])\n" +
          "wf.end(words='{{count.words}}', answer='{{ok.answer}}')\n" +
          "run = wf.run(text='Hello from Coze Lab')\n" +
          'run'
      ),
      markdown(
        'Next: the guides and the reference in `docs/` of the coze_lab repository ' +
          '(start with `docs/getting-started.md`), and the demo notebooks 00-03.'
      )
    ]
  };
}

/** The path of the welcome notebook, written first when the root has none. */
export async function welcomeNotebook(contents: Contents.IManager): Promise<string> {
  for (const path of WELCOME_NOTEBOOKS) {
    try {
      await contents.get(path, { content: false });
      return path;
    } catch {
      // not there: try the next one
    }
  }
  const path = WELCOME_NOTEBOOKS[WELCOME_NOTEBOOKS.length - 1];
  await contents.save(path, {
    type: 'notebook',
    format: 'json',
    content: shortWelcomeNotebook()
  });
  return path;
}
