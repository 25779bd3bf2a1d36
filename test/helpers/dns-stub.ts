/**
 * A DNS server for tests, speaking the real wire protocol over UDP on 127.0.0.1: each name answers
 * A records from a script (one address per look-up, the last one repeated), AAAA with no records,
 * and it counts the look-ups of each name. Enough for a name that resolves public first and
 * private on the next look-up (DNS rebinding).
 */
import dgram from 'node:dgram';
import type { AddressInfo } from 'node:net';

export interface DnsStub {
  /** host:port to put in a resolver's server list. */
  readonly address: string;
  /** A-record look-ups seen per name (lowercase, no trailing dot). */
  readonly lookups: Map<string, number>;
  close(): Promise<void>;
}

export async function startDnsStub(script: Record<string, readonly string[]>): Promise<DnsStub> {
  const socket = dgram.createSocket('udp4');
  const lookups = new Map<string, number>();
  socket.on('message', (query, peer) => {
    if (query.length < 12) return;
    const labels: string[] = [];
    let offset = 12;
    while (offset < query.length && query[offset] !== 0) {
      const length = query[offset]!;
      labels.push(query.subarray(offset + 1, offset + 1 + length).toString('ascii'));
      offset += length + 1;
    }
    const questionEnd = offset + 5; // zero byte, type (2), class (2)
    const type = query.readUInt16BE(offset + 1);
    const name = labels.join('.').toLowerCase();
    const answers = script[name];
    let address: string | undefined;
    if (type === 1 && answers) {
      const seen = lookups.get(name) ?? 0;
      lookups.set(name, seen + 1);
      address = answers[Math.min(seen, answers.length - 1)];
    }
    const header = Buffer.alloc(12);
    query.copy(header, 0, 0, 2); // id
    header.writeUInt16BE(answers ? 0x8180 : 0x8183, 2); // response, recursion available; NXDOMAIN for unknown names
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(address ? 1 : 0, 6);
    const parts = [header, query.subarray(12, questionEnd)];
    if (address) {
      const record = Buffer.alloc(16);
      record.writeUInt16BE(0xc00c, 0); // pointer to the question's name
      record.writeUInt16BE(1, 2); // A
      record.writeUInt16BE(1, 4); // IN
      record.writeUInt32BE(0, 6); // TTL 0: no cache may keep it
      record.writeUInt16BE(4, 10);
      address.split('.').forEach((octet, index) => record.writeUInt8(Number(octet), 12 + index));
      parts.push(record);
    }
    socket.send(Buffer.concat(parts), peer.port, peer.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(socket.address() as AddressInfo).port}`,
    lookups,
    close: () => new Promise((resolve) => socket.close(() => resolve())),
  };
}
