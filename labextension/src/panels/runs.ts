import { SplitPanel, Widget } from '@lumino/widgets';

import { requestAPI } from '../api';
import { inSpace } from '../space';
import { errorBox, growingTextarea, h, showError } from '../dom';
import { ICozeLabPanel } from '../tokens';

interface IWorkflow {
  id: string;
  name: string;
  description: string;
  published_version: number | null;
}

/** One node's record in a run's trace. */
interface INodeRecord {
  node_id: string;
  node_type?: string;
  status: string;
  inputs?: unknown;
  outputs?: unknown;
  port?: string | null;
  error?: unknown;
  attempts?: number;
  started_at?: number | null;
  finished_at?: number | null;
  latency_ms: number | null;
}

interface IRun {
  id: string;
  name: string | null;
  status: string;
  workflow_id: string | null;
  created_at: number;
  finished_at: number | null;
  inputs?: unknown;
  outputs?: unknown;
  error: { msg?: string; node_id?: string; code?: number } | null;
  retry_of?: string | null;
  nodes: INodeRecord[];
  definition?: { nodes?: { id: string; type: string }[] };
}

/**
 * A run's node records in the order they started. The node that failed the run
 * has no record of its own (its error is the run's): it is added from `run.error`.
 */
function traceNodes(run: IRun): INodeRecord[] {
  // Times are whole seconds: ties keep the definition's order.
  const order = (run.definition?.nodes ?? []).map(n => n.id);
  const nodes = run.nodes
    .map((node, i) => ({ node, index: order.includes(node.node_id) ? order.indexOf(node.node_id) : order.length + i }))
    .sort(
      (a, b) =>
        (a.node.started_at ?? Infinity) - (b.node.started_at ?? Infinity) || a.index - b.index
    )
    .map(item => item.node);
  const failing = run.error?.node_id;
  if (failing && !nodes.some(n => n.node_id === failing)) {
    const spec = run.definition?.nodes?.find(n => n.id === failing);
    nodes.push({
      node_id: failing,
      node_type: spec?.type,
      status: 'failed',
      error: run.error,
      started_at: null,
      finished_at: run.finished_at,
      latency_ms: null
    });
  }
  return nodes;
}

/** A start input of a workflow definition (`definition.inputs`). */
interface IStartInput {
  name: string;
  type?: string;
  required?: boolean;
  default?: unknown;
  description?: string;
}

/** `GET coze_lab/api/workflows/{id}`: the workflow with its draft definition. */
interface IWorkflowDetail extends IWorkflow {
  definition: { inputs?: IStartInput[] } | null;
}

const LIVE = new Set(['running', 'interrupted', 'pending', 'queued']);

function clock(seconds: number | null | undefined): string {
  return seconds ? new Date(seconds * 1000).toLocaleTimeString() : '—';
}

function duration(node: INodeRecord): string {
  let ms = node.latency_ms;
  if (ms === null || ms === undefined) {
    if (!node.started_at) {
      return '';
    }
    ms = ((node.finished_at ?? Date.now() / 1000) - node.started_at) * 1000;
  }
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

/** The given nodes without the absent ones (for `replaceChildren`). */
function present(...nodes: (Node | null)[]): Node[] {
  return nodes.filter((n): n is Node => n !== null);
}

function json(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2) ?? 'null';
  } catch {
    return String(value);
  }
}

function errorMessage(error: unknown): string {
  if (error === null || error === undefined || error === '') {
    return '';
  }
  if (typeof error === 'string') {
    return error;
  }
  const e = error as { msg?: unknown; message?: unknown; code?: unknown };
  const msg = e.msg ?? e.message;
  if (typeof msg === 'string') {
    return e.code !== undefined && e.code !== null ? `[${e.code}] ${msg}` : msg;
  }
  return json(error);
}

/**
 * Read a start input from its form control: the typed value, `undefined` for an
 * empty optional field (the server applies the default), or throws the message
 * shown under the field.
 */
function readField(spec: IStartInput, control: HTMLInputElement | HTMLTextAreaElement): unknown {
  const type = spec.type ?? 'string';
  if (type === 'boolean') {
    return (control as HTMLInputElement).checked;
  }
  if ((control as HTMLInputElement).validity?.badInput) {
    throw new Error(type === 'integer' ? 'must be a whole number' : 'must be a number');
  }
  const raw = control.value;
  if (raw.trim() === '' && type !== 'string') {
    if (spec.required) {
      throw new Error('required');
    }
    return undefined;
  }
  if (raw === '' && type === 'string') {
    if (spec.required) {
      throw new Error('required');
    }
    return undefined;
  }
  if (type === 'integer' || type === 'number') {
    const value = Number(raw);
    if (!Number.isFinite(value)) {
      throw new Error('must be a number');
    }
    if (type === 'integer' && !Number.isInteger(value)) {
      throw new Error('must be a whole number');
    }
    return value;
  }
  if (type === 'string') {
    return raw;
  }
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    if (type === 'object' || type === 'array') {
      throw new Error(`invalid JSON: ${(error as Error).message}`);
    }
    return raw; // "any": plain text is a string
  }
  if (type === 'array' && !Array.isArray(value)) {
    throw new Error('must be a JSON array, e.g. ["a", "b"]');
  }
  if (type === 'object' && (typeof value !== 'object' || value === null || Array.isArray(value))) {
    throw new Error('must be a JSON object, e.g. {"key": "value"}');
  }
  return value;
}

/** A pending question or form (`GET coze_lab/api/interrupts`). */
export interface IInterrupt {
  event_id: string;
  execute_id: string;
  node_id: string;
  type: string;
  data: {
    question?: string;
    choices?: string[];
    prompt?: string;
    form?: { fields: { name: string; type?: string; required?: boolean }[] };
  };
  expires_at: number | null;
}

/** Polling period while something is running or waiting (ms). */
const POLL_MS = 2000;

/**
 * Workflows section: stored workflows (run the draft), recent runs with live
 * status and node progress, and every pending question across all runs,
 * answerable here (`POST coze_lab/api/interrupts/{event_id}/resume`).
 */
export class RunsPanel extends Widget implements ICozeLabPanel {
  constructor() {
    super();
    this.id = 'coze-lab-runs';
    this.addClass('jp-CozeLab-panel');
    // A larger share of the sidebar's height than the small sections get.
    SplitPanel.setStretch(this, 3);
    this.title.label = 'Workflows & runs';
    this._error = errorBox('coze-lab-runs-error');
    this._pending = h('div', { class: 'jp-CozeLab-pending', testid: 'coze-lab-interrupts' });
    this._workflows = h('ul', { class: 'jp-CozeLab-list', testid: 'coze-lab-workflows' });
    this._runs = h('ul', { class: 'jp-CozeLab-list', testid: 'coze-lab-runs-list' });
    this._runForm = h('div', { class: 'jp-CozeLab-runform', testid: 'coze-lab-run-form' });
    this._runForm.hidden = true;
    this._trace = h('div', { class: 'jp-CozeLab-trace', testid: 'coze-lab-trace' });
    this._trace.hidden = true;
    this.node.append(
      this._error,
      h('div', { class: 'jp-CozeLab-subhead' }, 'Waiting for you'),
      this._pending,
      h('div', { class: 'jp-CozeLab-subhead' }, 'Workflows'),
      this._workflows,
      this._runForm,
      h('div', { class: 'jp-CozeLab-subhead' }, 'Recent runs'),
      this._runs,
      this._trace
    );
  }

  async refresh(): Promise<void> {
    try {
      const [workflows, runs, pending] = await Promise.all([
        requestAPI<{ workflows: IWorkflow[] }>(inSpace('workflows')),
        requestAPI<{ runs: IRun[] }>('runs?limit=15'),
        requestAPI<{ interrupts: IInterrupt[] }>('interrupts')
      ]);
      this._renderWorkflows(workflows.workflows);
      this._renderRuns(runs.runs);
      this._renderPending(pending.interrupts);
      let traceLive = false;
      if (this._traced) {
        const run = await requestAPI<IRun>(`runs/${this._traced}`);
        if (run.id === this._traced) {
          this._renderTrace(run);
          traceLive = LIVE.has(run.status);
        }
      }
      showError(this._error, null);
      const busy =
        traceLive ||
        pending.interrupts.length > 0 ||
        runs.runs.some(r => r.status === 'running');
      this._schedule(busy);
    } catch (error) {
      showError(this._error, error);
      this._schedule(true);
    }
  }

  override dispose(): void {
    window.clearTimeout(this._timer);
    super.dispose();
  }

  private _schedule(busy: boolean): void {
    window.clearTimeout(this._timer);
    if (busy && !this.isDisposed) {
      this._timer = window.setTimeout(() => {
        if (this.isVisible) {
          void this.refresh();
        } else {
          this._schedule(true);
        }
      }, POLL_MS);
    }
  }

  private _renderWorkflows(workflows: IWorkflow[]): void {
    this._workflows.replaceChildren(
      ...workflows.map(w =>
        h(
          'li',
          { dataset: { workflowId: w.id, testid: 'coze-lab-workflow' } },
          h('span', { class: 'jp-CozeLab-strong' }, w.name),
          h(
            'span',
            { class: 'jp-CozeLab-detail' },
            w.published_version ? ` v${w.published_version}` : ' draft'
          ),
          h(
            'button',
            {
              class: 'jp-CozeLab-link',
              title: 'Run the draft',
              testid: 'coze-lab-workflow-run',
              onclick: () => void this._openRunForm(w)
            },
            'Run'
          )
        )
      )
    );
    if (!workflows.length) {
      this._workflows.append(h('li', { class: 'jp-CozeLab-detail' }, 'none yet: wf.publish()'));
    }
  }

  /** A typed form built from the draft's start inputs, with a Run button. */
  private async _openRunForm(workflow: IWorkflow): Promise<void> {
    let detail: IWorkflowDetail;
    try {
      detail = await requestAPI<IWorkflowDetail>(`workflows/${workflow.id}`);
    } catch (error) {
      showError(this._error, error);
      return;
    }
    const specs = detail.definition?.inputs ?? [];
    const status = errorBox('coze-lab-run-form-error');
    const fields = specs.map(spec => {
      const type = spec.type ?? 'string';
      let control: HTMLInputElement | HTMLTextAreaElement;
      if (type === 'boolean') {
        control = h('input', { type: 'checkbox' });
        (control as HTMLInputElement).checked = spec.default === true;
      } else if (type === 'integer' || type === 'number') {
        control = h('input', { type: 'number', step: type === 'integer' ? '1' : 'any' });
        if (typeof spec.default === 'number') {
          control.value = String(spec.default);
        }
      } else if (type === 'string') {
        control = growingTextarea({ placeholder: 'text' });
        if (typeof spec.default === 'string') {
          control.value = spec.default;
        }
      } else {
        control = h('textarea', {
          rows: '2',
          placeholder: type === 'array' ? '["a", "b"]' : type === 'object' ? '{"key": "value"}' : 'JSON or text'
        });
        if (spec.default !== null && spec.default !== undefined) {
          control.value = JSON.stringify(spec.default);
        }
      }
      control.name = spec.name;
      control.dataset.testid = 'coze-lab-run-field';
      control.dataset.type = type;
      const message = h('div', { class: 'jp-CozeLab-invalid', testid: 'coze-lab-run-field-error' });
      message.hidden = true;
      const optional =
        !spec.required || (spec.default !== null && spec.default !== undefined);
      const label = h(
        'label',
        { dataset: { field: spec.name } },
        h(
          'span',
          {},
          h('span', { class: 'jp-CozeLab-strong' }, spec.name),
          h('span', { class: 'jp-CozeLab-detail' }, ` ${type}${optional ? '' : ' · required'}`)
        ),
        spec.description ? h('span', { class: 'jp-CozeLab-detail' }, spec.description) : null,
        control,
        message
      );
      return { spec, control, message, label };
    });
    const run = h(
      'button',
      { class: 'jp-CozeLab-button', testid: 'coze-lab-run-start' },
      'Run'
    );
    const submit = async (): Promise<void> => {
      const parameters: Record<string, unknown> = {};
      let ok = true;
      for (const { spec, control, message } of fields) {
        try {
          const value = readField(
            { ...spec, required: spec.required && (spec.default === null || spec.default === undefined) },
            control
          );
          if (value !== undefined) {
            parameters[spec.name] = value;
          }
          message.hidden = true;
          message.textContent = '';
          control.removeAttribute('aria-invalid');
        } catch (error) {
          ok = false;
          message.hidden = false;
          message.textContent = (error as Error).message;
          control.setAttribute('aria-invalid', 'true');
        }
      }
      if (!ok) {
        return;
      }
      run.disabled = true;
      try {
        const started = await requestAPI<{ execute_id: string }>(`workflows/${workflow.id}/runs`, {
          method: 'POST',
          body: JSON.stringify({ parameters })
        });
        this._closeRunForm();
        this._traced = started.execute_id;
        this._open.clear();
        await this.refresh(); // the list, the new question if any, and the trace
        this._trace.scrollIntoView({ block: 'nearest' });
      } catch (error) {
        showError(status, error);
      } finally {
        run.disabled = false;
      }
    };
    run.onclick = () => void submit();
    this._runForm.dataset.workflowId = workflow.id;
    this._runForm.replaceChildren(
      ...present(
      h('div', { class: 'jp-CozeLab-subhead' }, `Run ${workflow.name} (draft)`),
      status,
      ...fields.map(f => f.label),
      specs.length ? null : h('div', { class: 'jp-CozeLab-detail' }, 'no inputs'),
      h(
        'div',
        {},
        run,
        h(
          'button',
          { class: 'jp-CozeLab-link', onclick: () => this._closeRunForm() },
          'Close'
        )
      )
      )
    );
    this._runForm.hidden = false;
    this._runForm.scrollIntoView({ block: 'nearest' });
    (fields[0]?.control ?? run).focus();
  }

  private _closeRunForm(): void {
    this._runForm.hidden = true;
    this._runForm.replaceChildren();
  }

  /** Show a run's trace below the list (refreshed with the panel while it is live). */
  private async _openTrace(runId: string): Promise<void> {
    const fresh = this._traced !== runId;
    if (fresh) {
      this._traced = runId;
      this._open.clear();
    }
    try {
      const run = await requestAPI<IRun>(`runs/${runId}`);
      if (this._traced === runId) {
        this._renderTrace(run);
        if (fresh) {
          this._trace.scrollIntoView({ block: 'nearest' });
        }
        if (LIVE.has(run.status)) {
          this._schedule(true);
        }
      }
    } catch (error) {
      showError(this._error, error);
    }
  }

  /** Retry a failed or canceled run from `nodeId` and show the new run's trace. */
  private async _retry(runId: string, nodeId: string, button: HTMLButtonElement): Promise<void> {
    button.disabled = true;
    try {
      const retried = await requestAPI<{ execute_id: string }>(`runs/${runId}/retry`, {
        method: 'POST',
        body: JSON.stringify({ from_node: nodeId })
      });
      this._traced = retried.execute_id;
      this._open.clear();
      await this.refresh(); // the list with the new run, and its trace
      this._trace.scrollIntoView({ block: 'nearest' });
    } catch (error) {
      button.disabled = false;
      showError(this._error, error);
    }
  }

  private _closeTrace(): void {
    this._traced = '';
    this._open.clear();
    this._trace.hidden = true;
    this._trace.replaceChildren();
    this._runs.querySelectorAll('li.jp-mod-selected').forEach(li => li.classList.remove('jp-mod-selected'));
  }

  private _renderTrace(run: IRun): void {
    const failing = run.error?.node_id;
    const block = (node: string, what: 'inputs' | 'outputs', value: unknown): HTMLElement => {
      const key = `${node}/${what}`;
      const details = h(
        'details',
        { class: 'jp-CozeLab-json', dataset: { part: what } },
        h('summary', {}, what === 'inputs' ? 'Inputs' : 'Outputs'),
        h('pre', {}, json(value))
      );
      details.open = this._open.has(key);
      details.addEventListener('toggle', () => {
        if (details.open) {
          this._open.add(key);
        } else {
          this._open.delete(key);
        }
      });
      return details;
    };
    const stopped = run.status === 'failed' || run.status === 'canceled';
    const nodes = traceNodes(run).map(node => {
      const failed = node.status === 'failed' || node.node_id === failing;
      const error = errorMessage(node.error);
      // a failed run retries from the node it failed on; a canceled one from what had not finished
      const retryHere =
        stopped &&
        (run.status === 'failed'
          ? node.node_id === failing
          : !['succeeded', 'skipped'].includes(node.status));
      return h(
        'div',
        {
          class: `jp-CozeLab-tracenode${failed ? ' jp-mod-failed' : ''}`,
          dataset: { testid: 'coze-lab-trace-node', nodeId: node.node_id, status: node.status }
        },
        h(
          'div',
          {},
          h('span', { class: `jp-CozeLab-pill jp-mod-${node.status}` }, node.status),
          h('span', { class: 'jp-CozeLab-strong' }, ` ${node.node_id}`),
          node.node_type ? h('span', { class: 'jp-CozeLab-detail' }, ` ${node.node_type}`) : null
        ),
        h(
          'div',
          { class: 'jp-CozeLab-detail', testid: 'coze-lab-trace-timing' },
          `${clock(node.started_at)} → ${node.finished_at ? clock(node.finished_at) : '…'}`,
          duration(node) ? ` · ${duration(node)}` : '',
          node.attempts ? ` · ${node.attempts} attempt${node.attempts === 1 ? '' : 's'}` : '',
          node.port ? ` · port ${node.port}` : ''
        ),
        error ? h('div', { class: 'jp-CozeLab-invalid', testid: 'coze-lab-trace-error' }, error) : null,
        retryHere
          ? h(
              'button',
              {
                class: 'jp-CozeLab-button',
                title: 'A new run: the nodes before this one keep their outputs (no model or code is called again)',
                testid: 'coze-lab-trace-retry',
                onclick: (event: Event) => void this._retry(run.id, node.node_id, event.target as HTMLButtonElement)
              },
              'Retry from here'
            )
          : null,
        node.inputs !== null && node.inputs !== undefined
          ? block(node.node_id, 'inputs', node.inputs)
          : null,
        node.outputs !== null && node.outputs !== undefined
          ? block(node.node_id, 'outputs', node.outputs)
          : null
      );
    });
    this._trace.dataset.runId = run.id;
    this._trace.dataset.status = run.status;
    this._trace.replaceChildren(
      ...present(
      h(
        'div',
        { class: 'jp-CozeLab-subhead' },
        `Trace · ${run.name ?? 'run'} `,
        h('span', { class: `jp-CozeLab-pill jp-mod-${run.status}` }, run.status),
        h(
          'button',
          { class: 'jp-CozeLab-link', testid: 'coze-lab-trace-close', onclick: () => this._closeTrace() },
          'Close'
        )
      ),
      h(
        'div',
        { class: 'jp-CozeLab-detail', testid: 'coze-lab-trace-run' },
        `run ${run.id} · started ${clock(run.created_at)}${run.retry_of ? ` · retry of run ${run.retry_of}` : ''}`
      ),
      run.status === 'failed' && run.error
        ? h(
            'div',
            { class: 'jp-CozeLab-invalid' },
            `${errorMessage(run.error)}${failing ? ` (node ${failing})` : ''}`
          )
        : null,
      ...nodes,
      nodes.length ? null : h('div', { class: 'jp-CozeLab-detail' }, 'no node has started yet'),
      run.outputs !== null && run.outputs !== undefined && run.status === 'succeeded'
        ? block('(run)', 'outputs', run.outputs)
        : null
      )
    );
    this._trace.hidden = false;
    this._runs.querySelectorAll('li').forEach(li => {
      li.classList.toggle('jp-mod-selected', (li as HTMLElement).dataset.runId === run.id);
    });
  }

  private _renderRuns(runs: IRun[]): void {
    this._runs.replaceChildren(
      ...runs.map(run => {
        const done = run.nodes.filter(n => n.status === 'succeeded').length;
        const failing = run.error?.node_id ? ` at ${run.error.node_id}` : '';
        return h(
          'li',
          {
            class: `jp-CozeLab-clickable${run.id === this._traced ? ' jp-mod-selected' : ''}`,
            title: 'Show the trace',
            dataset: { runId: run.id, status: run.status, testid: 'coze-lab-run' },
            onclick: (event: MouseEvent) => {
              if (!(event.target as HTMLElement).closest('button')) {
                void this._openTrace(run.id);
              }
            }
          },
          h('span', { class: `jp-CozeLab-pill jp-mod-${run.status}` }, run.status),
          h('span', { class: 'jp-CozeLab-strong' }, ` ${run.name ?? 'run'}`),
          run.nodes.length
            ? h('span', { class: 'jp-CozeLab-detail' }, ` ${done}/${run.nodes.length} nodes`)
            : null,
          run.status === 'failed'
            ? h('div', { class: 'jp-CozeLab-detail' }, `${run.error?.msg ?? ''}${failing}`)
            : null,
          run.status === 'running' || run.status === 'interrupted'
            ? h(
                'button',
                {
                  class: 'jp-CozeLab-link',
                  onclick: () =>
                    void requestAPI(`runs/${run.id}/cancel`, { method: 'POST' })
                      .then(() => this.refresh())
                      .catch(error => showError(this._error, error))
                },
                'Cancel'
              )
            : null
        );
      })
    );
  }

  private _renderPending(items: IInterrupt[]): void {
    const key = items.map(i => i.event_id).join(',');
    if (key === this._shown) {
      return; // keep what the person is typing
    }
    this._shown = key;
    this._pending.replaceChildren(...items.map(item => this._form(item)));
    if (!items.length) {
      this._pending.append(h('div', { class: 'jp-CozeLab-detail' }, 'nothing pending'));
    }
  }

  private _form(item: IInterrupt): HTMLElement {
    const box = h('div', {
      class: 'jp-CozeLab-question',
      dataset: { eventId: item.event_id, testid: 'coze-lab-interrupt' }
    });
    const answer = async (data: unknown): Promise<void> => {
      try {
        await requestAPI(`interrupts/${item.event_id}/resume`, {
          method: 'POST',
          body: JSON.stringify({ data })
        });
        box.remove();
        this._shown = '';
        await this.refresh();
      } catch (error) {
        showError(this._error, error);
      }
    };
    box.append(h('div', { class: 'jp-CozeLab-detail' }, `run ${item.execute_id} · ${item.node_id}`));
    if (item.type === 'input') {
      if (item.data.prompt) {
        box.append(h('div', {}, item.data.prompt));
      }
      const inputs = (item.data.form?.fields ?? []).map(field => {
        const type = field.type ?? 'string';
        const input = h('input', {
          type: type === 'boolean' ? 'checkbox' : type === 'string' ? 'text' : 'number',
          name: field.name
        });
        box.append(h('label', {}, field.name, input));
        return { field, type, input };
      });
      box.append(
        h(
          'button',
          {
            class: 'jp-CozeLab-button',
            onclick: () => {
              const value: Record<string, unknown> = {};
              for (const { field, type, input } of inputs) {
                if (type === 'boolean') {
                  value[field.name] = input.checked;
                } else if (input.value === '') {
                  value[field.name] = null;
                } else if (type === 'integer') {
                  value[field.name] = parseInt(input.value, 10);
                } else if (type === 'number') {
                  value[field.name] = parseFloat(input.value);
                } else {
                  value[field.name] = input.value;
                }
              }
              void answer(value);
            }
          },
          'Submit'
        )
      );
    } else {
      box.append(h('div', { class: 'jp-CozeLab-strong' }, item.data.question ?? '?'));
      if (item.data.choices?.length) {
        box.append(
          h(
            'div',
            {},
            item.data.choices.map(choice =>
              h(
                'button',
                {
                  class: 'jp-CozeLab-button',
                  dataset: { choice },
                  onclick: () => void answer(choice)
                },
                choice
              )
            )
          )
        );
      } else {
        const text = growingTextarea({ placeholder: 'Your answer', testid: 'coze-lab-answer' });
        box.append(
          text,
          h(
            'button',
            { class: 'jp-CozeLab-button', onclick: () => void answer(text.value) },
            'Answer'
          )
        );
      }
    }
    return box;
  }

  private _timer = 0;
  private _shown = '';
  private _traced = '';
  private _open = new Set<string>();
  private _runForm: HTMLDivElement;
  private _trace: HTMLDivElement;
  private _error: HTMLDivElement;
  private _pending: HTMLDivElement;
  private _workflows: HTMLUListElement;
  private _runs: HTMLUListElement;
}
