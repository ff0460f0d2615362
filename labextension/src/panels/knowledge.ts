import { Widget } from '@lumino/widgets';

import { requestAPI } from '../api';
import { errorBox, h, showError } from '../dom';
import { inSpace } from '../space';
import { ICozeLabPanel } from '../tokens';

interface IDataset {
  dataset_id: string;
  name: string;
  doc_count: number;
  slice_count: number;
  file_list: string[];
  failed_file_list: string[];
  processing_file_list: string[];
}

/**
 * Knowledge bases of the current space with their documents and each document's status
 * (processing, done, failed). Add documents from a notebook (`cl.Knowledge("docs").add(...)`)
 * or the datasets API.
 */
export class KnowledgePanel extends Widget implements ICozeLabPanel {
  /** Used less often: folded until opened, so the runs and bots keep their room. */
  readonly startsFolded = true;

  constructor() {
    super();
    this.id = 'coze-lab-knowledge';
    this.addClass('jp-CozeLab-panel');
    this.title.label = 'Knowledge';
    this._error = errorBox('coze-lab-knowledge-error');
    this._list = h('ul', { class: 'jp-CozeLab-list', testid: 'coze-lab-dataset-list' });
    this.node.append(this._error, this._list);
  }

  async refresh(): Promise<void> {
    try {
      const data = await requestAPI<{ datasets: IDataset[] }>(inSpace('datasets'));
      this._render(data.datasets);
      showError(this._error, null);
    } catch (error) {
      showError(this._error, error);
    }
  }

  private _render(datasets: IDataset[]): void {
    if (datasets.length === 0) {
      this._list.replaceChildren(
        h('li', { class: 'jp-CozeLab-detail' }, 'none yet: cl.Knowledge("docs").add("report.pdf")')
      );
      return;
    }
    this._list.replaceChildren(
      ...datasets.map(dataset => {
        const status = (name: string): string =>
          dataset.failed_file_list.includes(name)
            ? 'failed'
            : dataset.processing_file_list.includes(name)
              ? 'processing'
              : 'done';
        const documents = h(
          'ul',
          { class: 'jp-CozeLab-list' },
          ...dataset.file_list.map(name =>
            h(
              'li',
              { testid: 'coze-lab-document' },
              name,
              ' ',
              h('span', { class: 'jp-CozeLab-pill', testid: 'coze-lab-document-status' }, status(name))
            )
          )
        );
        return h(
          'li',
          { testid: 'coze-lab-dataset' },
          h('strong', {}, dataset.name),
          ' ',
          h(
            'span',
            { class: 'jp-CozeLab-detail' },
            `${dataset.doc_count} document${dataset.doc_count === 1 ? '' : 's'} · ` +
              `${dataset.slice_count} chunk${dataset.slice_count === 1 ? '' : 's'}`
          ),
          documents
        );
      })
    );
  }

  private _error: HTMLDivElement;
  private _list: HTMLUListElement;
}
