import { Token } from '@lumino/coreutils';
import { Widget } from '@lumino/widgets';

/**
 * A section of the Coze Lab sidebar (status, bots, chat, workflows, runs, tokens...).
 */
export interface ICozeLabPanel extends Widget {
  /** Reload the section's data from the server. */
  refresh(): Promise<void>;
  /** True: the section keeps the height of its content (the rest share what is left). */
  readonly fitsContent?: boolean;
  /** True: the section starts folded (its title shows; a click opens it). */
  readonly startsFolded?: boolean;
}

/**
 * The Coze Lab left sidebar. Other plugins require this token and call
 * `addPanel` to plug their section in.
 */
export interface ICozeLabSidebar {
  /** Add a section; `rank` orders sections (lower first, default 100). */
  addPanel(panel: ICozeLabPanel, options?: { rank?: number }): void;
  /** Refresh every section. */
  refresh(): Promise<void>;
}

export const ICozeLabSidebar = new Token<ICozeLabSidebar>(
  'coze-lab:ICozeLabSidebar',
  'The Coze Lab left sidebar; add sections to it.'
);
