package nftables

// CollectorJSON names the nftables plane's dump in a snapshot
// (snapshot.Dump.Collector): the output of nft -j list ruleset.
const CollectorJSON = "nft-json"
