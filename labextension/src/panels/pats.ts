import { Widget } from '@lumino/widgets';

import { requestAPI } from '../api';
import { errorBox, h, showError } from '../dom';
import { ICozeLabPanel } from '../tokens';

interface ITokenInfo {
  id: string;
  name: string;
  hint: string;
  scopes: string[] | null;
  connector_id: string | null;
  expires_at: number | null;
  last_used_at: number | null;
  status: string;
}

function date(unix: number | null): string {
  return unix ? new Date(unix * 1000).toLocaleDateString() : 'never';
}

/**
 * Personal access tokens: create (the secret is shown once), list, revoke.
 */
export class TokensPanel extends Widget implements ICozeLabPanel {
  /** Used less often: folded until opened, so the runs and bots keep their room. */
  readonly startsFolded = true;

  constructor() {
    super();
    this.id = 'coze-lab-tokens';
    this.addClass('jp-CozeLab-panel');
    this.title.label = 'Access tokens';
    this._error = errorBox('coze-lab-tokens-error');
    this._list = h('ul', { class: 'jp-CozeLab-list', testid: 'coze-lab-token-list' });
    this._secret = h('div', { class: 'jp-CozeLab-secret', testid: 'coze-lab-token-secret' });
    this._secret.hidden = true;
    const name = h('input', { placeholder: 'Token name', testid: 'coze-lab-token-name' });
    const expiry = h(
      'select',
      { testid: 'coze-lab-token-expiry' },
      ...[
        ['30', '30 days'],
        ['1', '1 day'],
        ['90', '90 days'],
        ['180', '180 days'],
        ['365', '365 days'],
        ['', 'never']
      ].map(([value, label]) => h('option', { value }, label))
    );
    const connector = h(
      'select',
      { testid: 'coze-lab-token-connector' },
      h('option', { value: '' }, 'any connector'),
      h('option', { value: '1024' }, 'API (1024)'),
      h('option', { value: '999' }, 'Web SDK (999)')
    );
    const create = async (): Promise<void> => {
      const body: Record<string, unknown> = { name: name.value.trim() || 'lab token' };
      if (expiry.value) {
        body.expires_in_days = parseInt(expiry.value, 10);
      }
      if (connector.value) {
        body.connector_id = connector.value;
        body.scopes = ['chat'];
      }
      try {
        const made = await requestAPI<{ token: string }>('tokens', {
          method: 'POST',
          body: JSON.stringify(body)
        });
        this._secret.hidden = false;
        this._secret.replaceChildren(
          h('div', {}, 'Copy it now: it is shown only once.'),
          h('code', { testid: 'coze-lab-token-value' }, made.token)
        );
        name.value = '';
        await this.refresh();
      } catch (error) {
        showError(this._error, error);
      }
    };
    this.node.append(
      this._error,
      h(
        'div',
        { class: 'jp-CozeLab-row' },
        name,
        expiry,
        connector,
        h(
          'button',
          {
            class: 'jp-CozeLab-button',
            testid: 'coze-lab-token-create',
            onclick: () => void create()
          },
          'Create'
        )
      ),
      this._secret,
      this._list
    );
  }

  async refresh(): Promise<void> {
    try {
      const data = await requestAPI<{ tokens: ITokenInfo[] } | ITokenInfo[]>('tokens');
      const tokens = Array.isArray(data) ? data : data.tokens;
      this._list.replaceChildren(
        ...tokens.map(t =>
          h(
            'li',
            { dataset: { tokenId: t.id, status: t.status, testid: 'coze-lab-token' } },
            h('span', { class: 'jp-CozeLab-strong' }, t.name),
            h(
              'span',
              { class: 'jp-CozeLab-detail' },
              ` ${t.hint} · ${t.status} · expires ${date(t.expires_at)}` +
                (t.connector_id ? ` · connector ${t.connector_id}` : '')
            ),
            t.status === 'active'
              ? h(
                  'button',
                  {
                    class: 'jp-CozeLab-link',
                    testid: 'coze-lab-token-revoke',
                    onclick: () =>
                      void requestAPI(`tokens/${t.id}`, { method: 'DELETE' })
                        .then(() => this.refresh())
                        .catch(error => showError(this._error, error))
                  },
                  'Revoke'
                )
              : null
          )
        )
      );
      showError(this._error, null);
    } catch (error) {
      showError(this._error, error);
    }
  }

  private _error: HTMLDivElement;
  private _list: HTMLUListElement;
  private _secret: HTMLDivElement;
}
