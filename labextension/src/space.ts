/**
 * The space the sidebar works in (Coze's workspace): the personal one (the default) or a
 * team space the user belongs to. The bots, workflows and plugins lists, and what the sidebar
 * creates, are that space's; everything else (runs, questions, chats, tokens) stays the
 * user's own.
 */
import { Widget } from '@lumino/widgets';

import { requestAPI } from './api';
import { h } from './dom';

/** A space as `GET coze_lab/api/spaces` lists it. */
export interface ISpace {
  id: string;
  name: string;
  workspace_type: 'personal' | 'team';
  role: 'owner' | 'admin' | 'member';
}

let current: string | null = null;

const listeners = new Set<(space: string | null) => void>();

/** Call `listener` with the new space id (null: personal) whenever the picker changes it. */
export function onSpaceChanged(listener: (space: string | null) => void): void {
  listeners.add(listener);
}

function changed(): void {
  for (const listener of listeners) {
    listener(current);
  }
}

/** The id of the team space the sidebar works in; null for the personal space. */
export function currentSpace(): string | null {
  return current;
}

/**
 * An API path scoped to the current space: `inSpace('bots')` is `bots?space_id=...` in a
 * team space and `bots` in the personal one.
 */
export function inSpace(endPoint: string): string {
  if (current === null) {
    return endPoint;
  }
  const glue = endPoint.includes('?') ? '&' : '?';
  return `${endPoint}${glue}space_id=${encodeURIComponent(current)}`;
}

/** The picker in the sidebar's toolbar: a select of the user's spaces. */
export class SpacePicker extends Widget {
  constructor() {
    super({ node: document.createElement('label') });
    this.addClass('jp-CozeLab-space');
    this._select = h('select', {
      class: 'jp-CozeLab-space-select',
      testid: 'coze-lab-space',
      title: 'The space whose bots and workflows the sidebar shows'
    }) as HTMLSelectElement;
    this._select.addEventListener('change', () => {
      const value = this._select.value;
      current = value === '' ? null : value;
      changed();
    });
    this.node.append(h('span', { class: 'jp-CozeLab-space-label' }, 'Space'), this._select);
  }

  /** Reload the user's spaces (a space the user left falls back to personal). */
  async refresh(): Promise<void> {
    let spaces: ISpace[];
    try {
      spaces = (await requestAPI<{ spaces: ISpace[] }>('spaces')).spaces;
    } catch {
      return; // the sections show the server's error themselves
    }
    const options = spaces.map(space =>
      h(
        'option',
        { value: space.workspace_type === 'personal' ? '' : space.id },
        space.workspace_type === 'personal' ? 'Personal' : `${space.name} (${space.role})`
      )
    );
    this._select.replaceChildren(...options);
    const known = spaces.some(s => s.workspace_type === 'team' && s.id === current);
    if (current !== null && !known) {
      current = null;
      changed();
    }
    this._select.value = current ?? '';
  }

  private _select: HTMLSelectElement;
}
