// The entry images, tests and `npm start` run (dist/apps/<app>/main.js), emitted by
// `npm run build` and `npx nest build <app>` alike; the app itself is src/main.ts.
import './src/main';
