import {
  SidePanel,
  ToolbarButton,
  refreshIcon
} from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { SplitPanel, Widget } from '@lumino/widgets';

import { cozeIcon } from './icons';
import { SpacePicker, onSpaceChanged } from './space';
import { ICozeLabPanel, ICozeLabSidebar } from './tokens';

/** DOM id of the sidebar (also its `data-testid`). */
export const SIDEBAR_ID = 'coze-lab-sidebar';

/**
 * The Coze Lab left sidebar: a header, a toolbar with a Refresh button and an
 * accordion of sections (`ICozeLabPanel`). Sections are refreshed whenever
 * the sidebar is shown and when Refresh is pressed.
 */
export class CozeLabSidebar extends SidePanel implements ICozeLabSidebar {
  constructor() {
    super();
    this.id = SIDEBAR_ID;
    this.node.dataset.testid = SIDEBAR_ID;
    this.addClass('jp-CozeLab-sidebar');
    this.title.icon = cozeIcon;
    this.title.caption = 'Coze Lab';

    const heading = new Widget();
    heading.addClass('jp-CozeLab-heading');
    heading.node.textContent = 'Coze Lab';
    this.header.addWidget(heading);

    const refresh = new ToolbarButton({
      icon: refreshIcon,
      label: 'Refresh',
      tooltip: 'Reload Coze Lab status from the server',
      dataset: { testid: 'coze-lab-refresh' },
      onClick: () => {
        void this.refresh();
      }
    });
    this.toolbar.addItem('refresh', refresh);
    // the space whose bots and workflows the sections show (personal by default)
    this._picker = new SpacePicker();
    this.toolbar.addItem('space', this._picker);
    onSpaceChanged(() => {
      void Promise.all(this._panels.map(panel => panel.refresh()));
    });
  }

  addPanel(panel: ICozeLabPanel, options: { rank?: number } = {}): void {
    const rank = options.rank ?? 100;
    let index = this._ranks.findIndex(r => r > rank);
    if (index < 0) {
      index = this._ranks.length;
    }
    this._ranks.splice(index, 0, rank);
    this._panels.splice(index, 0, panel);
    if (SplitPanel.getStretch(panel) <= 0) {
      SplitPanel.setStretch(panel, 1); // share the height (larger sections set more)
    }
    this.insertWidget(index, panel);
    panel.disposed.connect(() => {
      const i = this._panels.indexOf(panel);
      if (i >= 0) {
        this._panels.splice(i, 1);
        this._ranks.splice(i, 1);
      }
    });
    if (this.isVisible) {
      void panel.refresh();
    }
  }

  async refresh(): Promise<void> {
    await this._picker.refresh();
    await Promise.all(this._panels.map(panel => panel.refresh()));
  }

  protected override onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    void this.refresh();
  }

  private _picker: SpacePicker;
  private _panels: ICozeLabPanel[] = [];
  private _ranks: number[] = [];
}
