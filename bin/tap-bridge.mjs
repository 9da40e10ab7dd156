#!/usr/bin/env node
import { importBuilt } from './built.mjs';

const { runBridge } = await importBuilt('tap-bridge', '../dist/reference/bridges/cli.js');
process.exit(await runBridge(process.argv.slice(2)));
