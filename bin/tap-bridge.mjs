#!/usr/bin/env node
import { importBuilt } from './built.mjs';

const { main } = await importBuilt('tap-bridge', '../dist/reference/bridges/cli.js');
process.exit(await main(process.argv.slice(2)));
