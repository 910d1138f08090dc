'use strict';
// require('<repo>/bindings/node/cordova'): the `cordova` object hybrid JavaScript written for
// Cordova expects (exec, define / require, document events), over the library's plugin
// dispatcher. Stores live under $SYNCSTORE_ROOT (else the per-user data directory) unless
// configure({root}) says otherwise; cordova.create(options) makes an independent bridge.
// See README.md, "Cordova and React Native bridges".
const { createCordova } = require('./lib/bridge');

const cordova = createCordova();
cordova.create = createCordova;

module.exports = cordova;
