#!/usr/bin/env node
import { runProgram } from '../dist/conformance/cli.js';

await runProgram();
