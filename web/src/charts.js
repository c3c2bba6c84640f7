// The ECharts modules the dashboard uses, imported one by one so the bundle
// holds only these (tree-shaking).
import * as echarts from 'echarts/core';
import { LineChart, ScatterChart, ParallelChart, BarChart } from 'echarts/charts';
import {
  GridComponent, TooltipComponent, LegendComponent, TitleComponent,
  ParallelComponent, DataZoomComponent, MarkPointComponent,
} from 'echarts/components';
import { CanvasRenderer } from 'echarts/renderers';

echarts.use([
  LineChart, ScatterChart, ParallelChart, BarChart,
  GridComponent, TooltipComponent, LegendComponent, TitleComponent,
  ParallelComponent, DataZoomComponent, MarkPointComponent, CanvasRenderer,
]);

export { echarts };
