import { LabIcon } from '@jupyterlab/ui-components';

const cozeSvg = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="16" height="16">
  <g class="jp-icon3" fill="#616161">
    <path d="M12 2a10 10 0 1 0 7.07 17.07l-1.42-1.42A8 8 0 1 1 20 12h2A10 10 0 0 0 12 2z"/>
    <circle cx="12" cy="12" r="3.2"/>
    <circle cx="20" cy="17" r="2"/>
  </g>
</svg>`;

export const cozeIcon = new LabIcon({ name: 'coze-lab:coze', svgstr: cozeSvg });
