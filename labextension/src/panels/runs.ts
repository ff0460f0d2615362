import { Widget } from '@lumino/widgets';

import { requestAPI } from '../api';
import { errorBox, h, showError } from '../dom';
import { ICozeLabPanel } from '../tokens';

interface IWorkflow {
  id: string;
  name: string;
  description: string;
  published_version: number | null;
}

interface IRun {
  id: string;
  name: string | null;
  status: string;
  workflow_id: string | null;
  created_at: number;
  finished_at: number | null;
  error: { msg?: string; node_id?: string } | null;
  nodes: { node_id: string; status: string; latency_ms: number | null }[];
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
    this.title.label = 'Workflows & runs';
    this._error = errorBox('coze-lab-runs-error');
    this._pending = h('div', { class: 'jp-CozeLab-pending', testid: 'coze-lab-interrupts' });
    this._workflows = h('ul', { class: 'jp-CozeLab-list', testid: 'coze-lab-workflows' });
    this._runs = h('ul', { class: 'jp-CozeLab-list', testid: 'coze-lab-runs-list' });
    this.node.append(
      this._error,
      h('div', { class: 'jp-CozeLab-subhead' }, 'Waiting for you'),
      this._pending,
      h('div', { class: 'jp-CozeLab-subhead' }, 'Workflows'),
      this._workflows,
      h('div', { class: 'jp-CozeLab-subhead' }, 'Recent runs'),
      this._runs
    );
  }

  async refresh(): Promise<void> {
    try {
      const [workflows, runs, pending] = await Promise.all([
        requestAPI<{ workflows: IWorkflow[] }>('workflows'),
        requestAPI<{ runs: IRun[] }>('runs?limit=15'),
        requestAPI<{ interrupts: IInterrupt[] }>('interrupts')
      ]);
      this._renderWorkflows(workflows.workflows);
      this._renderRuns(runs.runs);
      this._renderPending(pending.interrupts);
      showError(this._error, null);
      const busy =
        pending.interrupts.length > 0 || runs.runs.some(r => r.status === 'running');
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
          { dataset: { workflowId: w.id } },
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
              title: 'Run the draft; inputs as JSON',
              onclick: () => void this._run(w)
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

  private async _run(workflow: IWorkflow): Promise<void> {
    const raw = window.prompt(`Inputs of ${workflow.name} (JSON)`, '{}');
    if (raw === null) {
      return;
    }
    try {
      await requestAPI(`workflows/${workflow.id}/runs`, {
        method: 'POST',
        body: JSON.stringify({ parameters: JSON.parse(raw || '{}') })
      });
      await this.refresh();
    } catch (error) {
      showError(this._error, error);
    }
  }

  private _renderRuns(runs: IRun[]): void {
    this._runs.replaceChildren(
      ...runs.map(run => {
        const done = run.nodes.filter(n => n.status === 'succeeded').length;
        const failing = run.error?.node_id ? ` at ${run.error.node_id}` : '';
        return h(
          'li',
          { dataset: { runId: run.id, status: run.status, testid: 'coze-lab-run' } },
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
        const text = h('input', { type: 'text', placeholder: 'Your answer' });
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
  private _error: HTMLDivElement;
  private _pending: HTMLDivElement;
  private _workflows: HTMLUListElement;
  private _runs: HTMLUListElement;
}
