/**
 * Which IP addresses a web fetch may reach: public ones, plus the private, loopback or link-local
 * addresses a user allows explicitly. Guards against SSRF (a model asking for cloud metadata or an
 * internal service).
 */
import net from 'node:net';

const FORBIDDEN_V4: ReadonlyArray<readonly [string, number]> = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
];
const FORBIDDEN_V6: ReadonlyArray<readonly [string, number]> = [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['64:ff9b::', 96],
];

export class AddressGuard {
  private readonly forbidden = new net.BlockList();
  private readonly allowed = new net.BlockList();

  /** @param allow IPs or CIDRs ("127.0.0.1", "10.0.0.0/8", "::1") reachable although private. */
  constructor(allow: readonly string[] = []) {
    for (const [address, prefix] of FORBIDDEN_V4) this.forbidden.addSubnet(address, prefix, 'ipv4');
    for (const [address, prefix] of FORBIDDEN_V6) this.forbidden.addSubnet(address, prefix, 'ipv6');
    for (const entry of allow) {
      const [address = '', prefix] = entry.split('/');
      const family = net.isIP(address);
      if (family === 0) throw new Error(`not an IP address or CIDR range: "${entry}"`);
      const type = family === 4 ? 'ipv4' : 'ipv6';
      if (prefix === undefined) this.allowed.addAddress(address, type);
      else this.allowed.addSubnet(address, Number(prefix), type);
    }
  }

  /** True when a web fetch may connect to this address. */
  permits(address: string): boolean {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
    const plain = mapped ?? address;
    const type = net.isIP(plain) === 4 ? 'ipv4' : 'ipv6';
    if (this.allowed.check(plain, type)) return true;
    return !this.forbidden.check(plain, type);
  }
}
