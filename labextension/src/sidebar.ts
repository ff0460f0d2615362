import {
  SidePanel,
  ToolbarButton,
  refreshIcon
} from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { AccordionPanel, SplitPanel, Widget } from '@lumino/widgets';

import { cozeIcon } from './icons';
import { SpacePicker, onSpaceChanged } from './space';
import { ICozeLabPanel, ICozeLabSidebar } from './tokens';

/** DOM id of the sidebar (also its `data-testid`). */
export const SIDEBAR_ID = 'coze-lab-sidebar';
/** localStorage: the sections whose heights were last shared out (see shareNewSections). */
const SECTIONS_KEY = 'coze-lab:sidebar-sections';

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

  /**
   * Give each section its share of the height by its stretch (the runs the most) when
   * this set of sections is new to this browser: JupyterLab restores the sizes saved with
   * the workspace, which for a new set of sections squeeze the ones added last to a line.
   * A section that fits its content keeps its content's height; the sections used less
   * often start folded.
   */
  shareNewSections(): void {
    const sections = this._panels.map(panel => panel.id).join(',');
    if (window.localStorage.getItem(SECTIONS_KEY) !== sections) {
      this._sharePending = true;
      if (this.isVisible) {
        requestAnimationFrame(() => this._share());
      }
    }
  }

  private _share(): void {
    const content = this.content as unknown as Partial<AccordionPanel>;
    if (
      !this._sharePending ||
      !this.content.node.clientHeight ||
      !content.widgets ||
      typeof content.collapse !== 'function'
    ) {
      return;
    }
    this._sharePending = false;
    content.widgets.forEach((widget, i) => {
      if ((widget as ICozeLabPanel).startsFolded) {
        content.collapse!(i);
      }
    });
    this._fit();
    if (!this._followsToggles && content.expansionToggled) {
      // a section opened later gets its share too (not the line it was folded to)
      this._followsToggles = true;
      content.expansionToggled.connect(() => requestAnimationFrame(() => this._fit()));
    }
    window.localStorage.setItem(
      SECTIONS_KEY,
      this._panels.map(panel => panel.id).join(',')
    );
  }

  /** The open sections' heights: by stretch, a section that fits its content its own. */
  private _fit(): void {
    const content = this.content as unknown as Partial<AccordionPanel>;
    const height = this.content.node.clientHeight;
    if (!height || !content.widgets || typeof content.setRelativeSizes !== 'function') {
      return;
    }
    const widgets = content.widgets;
    const folded = widgets.map(widget => widget.isHidden);
    const titles = widgets.length * 32; // the sections' title bars
    const fitted = widgets.map((widget, i) =>
      !folded[i] && (widget as ICozeLabPanel).fitsContent ? widget.node.scrollHeight + 16 : 0
    );
    const rest = Math.max(height - titles - fitted.reduce((a, b) => a + b, 0), 0);
    const stretch = widgets.map((widget, i) =>
      fitted[i] || folded[i] ? 0 : Math.max(SplitPanel.getStretch(widget), 1)
    );
    const total = stretch.reduce((a, b) => a + b, 0) || 1;
    content.setRelativeSizes(widgets.map((_, i) => fitted[i] || (rest * stretch[i]) / total));
  }

  async refresh(): Promise<void> {
    await this._picker.refresh();
    await Promise.all(this._panels.map(panel => panel.refresh()));
  }

  protected override onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    if (this._sharePending) {
      requestAnimationFrame(() => this._share());
    }
    void this.refresh();
  }

  private _picker: SpacePicker;
  private _sharePending = false;
  private _followsToggles = false;
  private _panels: ICozeLabPanel[] = [];
  private _ranks: number[] = [];
}
