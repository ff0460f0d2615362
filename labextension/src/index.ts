import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { ILauncher } from '@jupyterlab/launcher';
import { Widget } from '@lumino/widgets';

import { BotsPanel } from './panels/bots';
import { MemoryPanel } from './panels/memory';
import { TokensPanel } from './panels/pats';
import { KnowledgePanel } from './panels/knowledge';
import { PluginsPanel } from './panels/plugins';
import { RunsPanel } from './panels/runs';
import { StatusPanel } from './panels/status';
import { cozeIcon, cozeLogoIcon } from './icons';
import { CozeLabSidebar } from './sidebar';
import { ICozeLabSidebar } from './tokens';
import { welcomeNotebook } from './welcome';

export { CozeApiError, requestAPI, apiUrl } from './api';
export { ICozeLabPanel, ICozeLabSidebar } from './tokens';
export * from './types';

namespace CommandIDs {
  export const open = 'coze-lab:open';
  export const refresh = 'coze-lab:refresh';
  export const welcome = 'coze-lab:welcome';
}

/** The left sidebar; other Coze Lab plugins add their sections through `ICozeLabSidebar`. */
const sidebarPlugin: JupyterFrontEndPlugin<ICozeLabSidebar> = {
  id: 'coze-lab:sidebar',
  description: 'The Coze Lab left sidebar.',
  autoStart: true,
  provides: ICozeLabSidebar,
  optional: [ILayoutRestorer, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null
  ): ICozeLabSidebar => {
    const sidebar = new CozeLabSidebar();
    app.shell.add(sidebar, 'left', { rank: 850, type: 'Coze Lab' });
    if (restorer) {
      restorer.add(sidebar, sidebar.id);
    }
    // JupyterLab restores the sections' sizes saved with the workspace; a new set of
    // sections starts from their shares instead (later the user's own sizes are kept)
    void app.restored.then(() => sidebar.shareNewSections());

    app.commands.addCommand(CommandIDs.open, {
      label: 'Open Coze Lab',
      caption: 'Show the Coze Lab sidebar',
      execute: () => {
        app.shell.activateById(sidebar.id);
      }
    });
    app.commands.addCommand(CommandIDs.refresh, {
      label: 'Refresh Coze Lab',
      caption: 'Reload Coze Lab status from the server',
      execute: () => sidebar.refresh()
    });
    if (palette) {
      for (const command of [CommandIDs.open, CommandIDs.refresh]) {
        palette.addItem({ command, category: 'Coze Lab' });
      }
    }
    return sidebar;
  }
};

/** Status section: version, user, database and sandbox health. */
const statusPlugin: JupyterFrontEndPlugin<void> = {
  id: 'coze-lab:status',
  description: 'Coze Lab server status in the sidebar.',
  autoStart: true,
  requires: [ICozeLabSidebar],
  activate: (_app: JupyterFrontEnd, sidebar: ICozeLabSidebar): void => {
    sidebar.addPanel(new StatusPanel(), { rank: 0 });
  }
};

/** Studio sections: bots and chat, workflows / runs / pending questions, tokens. */
const studioPlugin: JupyterFrontEndPlugin<void> = {
  id: 'coze-lab:studio',
  description: 'Coze Lab bots, chat, plugins, knowledge, workflows, runs, questions and tokens in the sidebar.',
  autoStart: true,
  requires: [ICozeLabSidebar],
  activate: (app: JupyterFrontEnd, sidebar: ICozeLabSidebar): void => {
    const openTab = (widget: Widget): void => {
      if (!widget.isAttached) {
        app.shell.add(widget, 'main');
      }
      app.shell.activateById(widget.id);
    };
    sidebar.addPanel(new RunsPanel(), { rank: 10 });
    sidebar.addPanel(new BotsPanel({ openTab }), { rank: 20 });
    sidebar.addPanel(new PluginsPanel(), { rank: 25 });
    sidebar.addPanel(new KnowledgePanel(), { rank: 27 });
    sidebar.addPanel(new MemoryPanel(), { rank: 28 });
    sidebar.addPanel(new TokensPanel(), { rank: 30 });
  }
};

/** The Launcher's "Coze Lab" tile: opens the welcome notebook (and the sidebar). */
const launcherPlugin: JupyterFrontEndPlugin<void> = {
  id: 'coze-lab:launcher',
  description: 'A Coze Lab tile in the Launcher that opens the welcome notebook.',
  autoStart: true,
  requires: [ICozeLabSidebar],
  optional: [ILauncher, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    _sidebar: ICozeLabSidebar,
    launcher: ILauncher | null,
    palette: ICommandPalette | null
  ): void => {
    app.commands.addCommand(CommandIDs.welcome, {
      label: args => (args['isLauncher'] ? 'Coze Lab' : 'Open the Coze Lab welcome notebook'),
      caption: 'Open the Coze Lab welcome notebook',
      icon: args => (args['isLauncher'] ? cozeLogoIcon : cozeIcon),
      execute: async () => {
        const path = await welcomeNotebook(app.serviceManager.contents);
        await app.commands.execute('docmanager:open', { path });
        await app.commands.execute(CommandIDs.open);
      }
    });
    if (launcher) {
      launcher.add({
        command: CommandIDs.welcome,
        args: { isLauncher: true },
        category: 'Coze Lab',
        rank: 0
      });
    }
    if (palette) {
      palette.addItem({ command: CommandIDs.welcome, category: 'Coze Lab' });
    }
  }
};

const plugins: JupyterFrontEndPlugin<any>[] = [
  sidebarPlugin,
  statusPlugin,
  studioPlugin,
  launcherPlugin
];
export default plugins;
