import { Widget } from '@lumino/widgets';

import { requestAPI } from '../api';
import { errorBox, h, showError } from '../dom';
import { inSpace } from '../space';
import { ICozeLabPanel } from '../tokens';

interface IMemoryDoc {
  name?: string;
  path: string;
  content: string;
  updated_at: number | null;
}

interface IMemoryChange {
  op: string;
  kind: string;
  name: string;
  text: string;
  source: string;
  message_id: string;
  applied_at: number;
}

interface IMemory {
  user: IMemoryDoc;
  skills: IMemoryDoc[];
  changes: IMemoryChange[];
  jobs: { queued: number; running: number; done: number };
}

/**
 * Your long-term memory in the current space: user.md and the skills, editable and
 * deletable, the last changes (each with the message it came from) and the queue.
 */
export class MemoryPanel extends Widget implements ICozeLabPanel {
  /** Used less often: folded until opened, so the runs and bots keep their room. */
  readonly startsFolded = true;

  constructor() {
    super();
    this.id = 'coze-lab-memory';
    this.addClass('jp-CozeLab-panel');
    this.title.label = 'Memory';
    this._error = errorBox('coze-lab-memory-error');
    this._user = h('textarea', {
      class: 'jp-CozeLab-memory-text',
      rows: '6',
      testid: 'coze-lab-memory-user'
    });
    this._skills = h('ul', { class: 'jp-CozeLab-list', testid: 'coze-lab-memory-skills' });
    this._changes = h('ul', { class: 'jp-CozeLab-list', testid: 'coze-lab-memory-changes' });
    this._jobs = h('div', { class: 'jp-CozeLab-detail', testid: 'coze-lab-memory-jobs' });
    const skillName = h('input', {
      placeholder: 'skill-name',
      testid: 'coze-lab-memory-skill-name'
    });
    const skillText = h('textarea', {
      rows: '3',
      placeholder: 'How to do it (Markdown)',
      testid: 'coze-lab-memory-skill-text'
    });
    const button = (label: string, testid: string, onclick: () => void): HTMLElement =>
      h('button', { class: 'jp-CozeLab-button', testid, onclick }, label);
    this.node.append(
      this._error,
      this._jobs,
      h('div', { class: 'jp-CozeLab-strong' }, 'user.md'),
      this._user,
      h(
        'div',
        { class: 'jp-CozeLab-row' },
        button('Save', 'coze-lab-memory-save', () =>
          void this._call('memory/user', 'PUT', { content: this._user.value })
        ),
        button('Forget', 'coze-lab-memory-forget', () =>
          void this._call('memory/user', 'DELETE')
        )
      ),
      h('div', { class: 'jp-CozeLab-strong' }, 'Skills'),
      this._skills,
      h(
        'div',
        { class: 'jp-CozeLab-row' },
        skillName,
        button('Save skill', 'coze-lab-memory-skill-save', () =>
          void this._call(`memory/skills/${encodeURIComponent(skillName.value.trim())}`, 'PUT', {
            content: skillText.value
          }).then(ok => {
            if (ok) {
              skillName.value = '';
              skillText.value = '';
            }
          })
        )
      ),
      skillText,
      h('div', { class: 'jp-CozeLab-strong' }, 'Last changes'),
      this._changes
    );
  }

  async refresh(): Promise<void> {
    try {
      this._show(await requestAPI<IMemory>(inSpace('memory')));
      showError(this._error, null);
    } catch (error) {
      showError(this._error, error);
    }
  }

  private async _call(path: string, method: string, body?: unknown): Promise<boolean> {
    try {
      await requestAPI(inSpace(path), {
        method,
        body: body === undefined ? undefined : JSON.stringify(body)
      });
      await this.refresh();
      return true;
    } catch (error) {
      showError(this._error, error);
      return false;
    }
  }

  private _show(memory: IMemory): void {
    if (document.activeElement !== this._user) {
      this._user.value = memory.user.content;
    }
    const jobs = memory.jobs;
    this._jobs.textContent = `queued ${jobs.queued} · running ${jobs.running} · done ${jobs.done}`;
    this._skills.replaceChildren(
      ...memory.skills.map(skill =>
        h(
          'li',
          { dataset: { skill: skill.name ?? '', testid: 'coze-lab-memory-skill' } },
          h('span', { class: 'jp-CozeLab-strong' }, skill.name ?? skill.path),
          h('pre', { class: 'jp-CozeLab-detail' }, skill.content),
          h(
            'button',
            {
              class: 'jp-CozeLab-link',
              testid: 'coze-lab-memory-skill-delete',
              onclick: () =>
                void this._call(
                  `memory/skills/${encodeURIComponent(skill.name ?? '')}`,
                  'DELETE'
                )
            },
            'Delete'
          )
        )
      )
    );
    this._changes.replaceChildren(
      ...memory.changes.map(change =>
        h(
          'li',
          { dataset: { testid: 'coze-lab-memory-change', messageId: change.message_id } },
          `${change.op} ${change.kind}${change.name ? ` ${change.name}` : ''}: ${change.text}`,
          h(
            'span',
            { class: 'jp-CozeLab-detail' },
            ` · message ${change.message_id} · ${change.source}`
          )
        )
      )
    );
  }

  private _error: HTMLDivElement;
  private _user: HTMLTextAreaElement;
  private _skills: HTMLUListElement;
  private _changes: HTMLUListElement;
  private _jobs: HTMLDivElement;
}
