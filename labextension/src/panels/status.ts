import { Widget } from '@lumino/widgets';

import { CozeApiError, requestAPI } from '../api';
import { ICozeLabPanel } from '../tokens';
import { IHealthInfo } from '../types';

/** Fetch `GET coze_lab/api/health`. */
export function fetchHealth(): Promise<IHealthInfo> {
  return requestAPI<IHealthInfo>('health');
}

function yesNo(value: boolean): string {
  return value ? 'yes' : 'no';
}

/**
 * Status section: server version, current user, database and sandbox health.
 *
 * Stable DOM hooks (`data-testid`, also used as element ids):
 * `coze-lab-version`, `coze-lab-user`, `coze-lab-db`, `coze-lab-sandbox`,
 * `coze-lab-error`, `coze-lab-updated`.
 */
export class StatusPanel extends Widget implements ICozeLabPanel {
  /** Every status row shows, without scrolling. */
  readonly fitsContent = true;

  constructor(options: StatusPanel.IOptions = {}) {
    super();
    this._fetch = options.fetch ?? fetchHealth;
    this.id = 'coze-lab-status';
    this.addClass('jp-CozeLab-panel');
    this.addClass('jp-CozeLab-status');
    this.title.label = 'Status';
    this.title.caption = 'Coze Lab server status';

    this._error = this._element('div', 'coze-lab-error', 'jp-CozeLab-error');
    this._error.setAttribute('role', 'alert');
    this._error.hidden = true;
    this.node.appendChild(this._error);

    const list = document.createElement('dl');
    list.className = 'jp-CozeLab-fields';
    this._version = this._field(list, 'Version', 'coze-lab-version');
    this._user = this._field(list, 'User', 'coze-lab-user');
    this._db = this._field(list, 'Database', 'coze-lab-db');
    this._sandbox = this._field(list, 'Sandbox', 'coze-lab-sandbox');
    this.node.appendChild(list);

    this._updated = this._element('div', 'coze-lab-updated', 'jp-CozeLab-updated');
    this.node.appendChild(this._updated);
  }

  /** The last health payload, or null before the first success / after an error. */
  get health(): IHealthInfo | null {
    return this._health;
  }

  /** Reload; concurrent calls share one request. */
  refresh(): Promise<void> {
    if (!this._pending) {
      this._pending = this._load().finally(() => {
        this._pending = null;
      });
    }
    return this._pending;
  }

  private async _load(): Promise<void> {
    this.node.setAttribute('aria-busy', 'true');
    this.node.dataset.state = 'loading';
    try {
      const health = await this._fetch();
      this._health = health;
      this._render(health);
      this._showError(null);
      this.node.dataset.state = 'ok';
    } catch (error) {
      this._health = null;
      this._clear();
      this._showError(error);
      this.node.dataset.state = 'error';
    } finally {
      this.node.removeAttribute('aria-busy');
      this._updated.textContent = `Updated ${new Date().toLocaleTimeString()}`;
    }
  }

  private _render(health: IHealthInfo): void {
    this._version.textContent = health.version;

    const user = health.user;
    this._user.replaceChildren(
      this._span(user.name, 'coze-lab-user-name', 'jp-CozeLab-strong'),
      this._span(`id ${user.id}`, 'coze-lab-user-id', 'jp-CozeLab-detail'),
      this._span(
        `workspace ${user.workspace_id}`,
        'coze-lab-workspace-id',
        'jp-CozeLab-detail'
      )
    );

    const db = health.database;
    const dbParts = [
      this._badge(db.ok, 'coze-lab-db-ok'),
      this._span(db.dialect, 'coze-lab-db-dialect', 'jp-CozeLab-strong'),
      this._span(
        `revision ${db.revision ?? 'none'}`,
        'coze-lab-db-revision',
        'jp-CozeLab-detail'
      )
    ];
    if (db.error) {
      dbParts.push(this._span(db.error, 'coze-lab-db-error', 'jp-CozeLab-detail'));
    }
    this._db.replaceChildren(...dbParts);

    const sb = health.sandbox;
    const sbParts = [
      this._badge(
        sb.installed && sb.started,
        'coze-lab-sandbox-ok',
        sb.installed ? (sb.started ? 'running' : 'stopped') : 'not installed'
      ),
      this._span(
        `installed ${yesNo(sb.installed)} · started ${yesNo(sb.started)}`,
        'coze-lab-sandbox-state',
        'jp-CozeLab-detail'
      ),
      this._span(
        `workers ${sb.workers} (busy ${sb.busy}) · runs ${sb.runs} · restarts ${sb.restarts}`,
        'coze-lab-sandbox-counts',
        'jp-CozeLab-detail'
      )
    ];
    if (sb.error) {
      sbParts.push(this._span(sb.error, 'coze-lab-sandbox-error', 'jp-CozeLab-detail'));
    }
    this._sandbox.replaceChildren(...sbParts);
    this._fitContent();
  }

  /**
   * Ask the sidebar for the height the whole status needs, so no row hides below the
   * fold of its section (the other sections share what is left).
   */
  private _fitContent(): void {
    requestAnimationFrame(() => {
      const style = getComputedStyle(this.node);
      const padding = parseFloat(style.paddingTop) + parseFloat(style.paddingBottom);
      const needed = Array.from(this.node.children).reduce((sum, child) => {
        const box = getComputedStyle(child);
        const margins = parseFloat(box.marginTop) + parseFloat(box.marginBottom);
        return sum + (child as HTMLElement).offsetHeight + margins;
      }, padding);
      const min = `${Math.ceil(needed)}px`;
      if (this.node.style.minHeight !== min) {
        this.node.style.minHeight = min;
        this.parent?.fit();
      }
    });
  }

  private _clear(): void {
    for (const node of [this._version, this._user, this._db, this._sandbox]) {
      node.textContent = '—';
    }
  }

  private _showError(error: unknown): void {
    if (error === null) {
      this._error.hidden = true;
      this._error.textContent = '';
      return;
    }
    let text: string;
    if (error instanceof CozeApiError) {
      text = error.code > 0 ? `${error.msg} (code ${error.code})` : error.msg;
    } else if (error instanceof Error) {
      text = error.message;
    } else {
      text = String(error);
    }
    this._error.textContent = text;
    this._error.hidden = false;
    this._fitContent();
  }

  private _field(list: HTMLElement, label: string, testid: string): HTMLElement {
    const dt = document.createElement('dt');
    dt.textContent = label;
    const dd = this._element('dd', testid, 'jp-CozeLab-value');
    dd.textContent = '…';
    list.append(dt, dd);
    return dd;
  }

  private _badge(ok: boolean, testid: string, text?: string): HTMLElement {
    return this._span(
      text ?? (ok ? 'ok' : 'error'),
      testid,
      ok ? 'jp-CozeLab-badge jp-mod-ok' : 'jp-CozeLab-badge jp-mod-bad'
    );
  }

  private _span(text: string, testid: string, className: string): HTMLElement {
    const span = this._element('span', testid, className);
    span.textContent = text;
    return span;
  }

  private _element<K extends keyof HTMLElementTagNameMap>(
    tag: K,
    testid: string,
    className: string
  ): HTMLElementTagNameMap[K] {
    const node = document.createElement(tag);
    node.id = testid;
    node.dataset.testid = testid;
    node.className = className;
    return node;
  }

  private _fetch: () => Promise<IHealthInfo>;
  private _health: IHealthInfo | null = null;
  private _pending: Promise<void> | null = null;
  private _error: HTMLElement;
  private _version: HTMLElement;
  private _user: HTMLElement;
  private _db: HTMLElement;
  private _sandbox: HTMLElement;
  private _updated: HTMLElement;
}

export namespace StatusPanel {
  export interface IOptions {
    /** Replace the health request (tests). */
    fetch?: () => Promise<IHealthInfo>;
  }
}
