import { Transform } from 'node:stream';
export function sourceNames(line: string): string;
export default class SummaryReporter extends Transform {}
