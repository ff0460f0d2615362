import { Widget } from '@lumino/widgets';

import { requestAPI } from '../api';
import { errorBox, h, showError } from '../dom';
import { inSpace } from '../space';
import { ICozeLabPanel } from '../tokens';

interface IPlugin {
  id: string;
  name: string;
  description: string;
  online_version: number | null;
  auth: { type: string; configured?: boolean; authorized?: boolean };
  tools: { id: string; name: string }[];
}

/**
 * Plugins of the current space: name, tools, published version and whether *your*
 * credentials are set (they stay each member's own). Import and edit from a notebook
 * (`cl.Plugin.from_openapi(...)`) or the studio API.
 */
export class PluginsPanel extends Widget implements ICozeLabPanel {
  /** Used less often: folded until opened, so the runs and bots keep their room. */
  readonly startsFolded = true;

  constructor() {
    super();
    this.id = 'coze-lab-plugins';
    this.addClass('jp-CozeLab-panel');
    this.title.label = 'Plugins';
    this._error = errorBox('coze-lab-plugins-error');
    this._list = h('ul', { class: 'jp-CozeLab-list', testid: 'coze-lab-plugin-list' });
    this.node.append(this._error, this._list);
  }

  async refresh(): Promise<void> {
    try {
      const data = await requestAPI<{ plugins: IPlugin[] }>(inSpace('plugins'));
      this._render(data.plugins);
      showError(this._error, null);
    } catch (error) {
      showError(this._error, error);
    }
  }

  private _render(plugins: IPlugin[]): void {
    if (plugins.length === 0) {
      this._list.replaceChildren(
        h('li', { class: 'jp-CozeLab-detail' }, 'none yet: cl.Plugin.from_openapi(...)')
      );
      return;
    }
    this._list.replaceChildren(
      ...plugins.map(plugin => {
        const published =
          plugin.online_version === null ? 'draft' : `published v${plugin.online_version}`;
        const auth = plugin.auth.type;
        const ready =
          auth === 'none' ||
          plugin.auth.configured === true ||
          plugin.auth.authorized === true;
        return h(
          'li',
          { testid: 'coze-lab-plugin' },
          h('strong', {}, plugin.name),
          ' ',
          h('span', { class: 'jp-CozeLab-pill' }, published),
          ' ',
          h(
            'span',
            { class: 'jp-CozeLab-detail' },
            `${plugin.tools.length} tool${plugin.tools.length === 1 ? '' : 's'}` +
              (auth === 'none' ? '' : ` · ${auth}: ${ready ? 'your credentials set' : 'set yours'}`)
          )
        );
      })
    );
  }

  private _error: HTMLDivElement;
  private _list: HTMLUListElement;
}
