import { LabIcon } from '@jupyterlab/ui-components';

/**
 * Coze Lab's mark: a chat bubble (bots) holding a small flow of three nodes (workflows).
 * The sidebar tab uses the theme's icon colour; the Launcher tile the brand colour.
 */
const mark = (bubble: string, inner: string): string => `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="16" height="16">
  <path ${bubble} d="M5 2.5h14A3 3 0 0 1 22 5.5v9a3 3 0 0 1-3 3h-6.2L7.4 21.6a.6.6 0 0 1-1-.5v-3.6H5a3 3 0 0 1-3-3v-9a3 3 0 0 1 3-3z"/>
  <g ${inner}>
    <path fill="none" stroke-width="1.5" stroke-linecap="round" d="M7.5 12.2 12 7.8l4.5 4.4"/>
    <circle cx="7.5" cy="12.2" r="2"/>
    <circle cx="12" cy="7.8" r="2"/>
    <circle cx="16.5" cy="12.2" r="2"/>
  </g>
</svg>`;

export const cozeIcon = new LabIcon({
  name: 'coze-lab:coze',
  svgstr: mark(
    'class="jp-icon3" fill="#616161"',
    'class="jp-icon-accent0" fill="#fff" stroke="#fff"'
  )
});

export const cozeLogoIcon = new LabIcon({
  name: 'coze-lab:logo',
  svgstr: mark('fill="#4D53E8"', 'fill="#fff" stroke="#fff"')
});
