// A small hybrid client shaped like the smartstore and mobilesync modules of the Mobile SDK's
// cordova.force.js (written for these tests): a browser script, loaded as a <script> tag would
// (cordova.loadScript), sloppy mode (checkFirstArg re-invokes its caller through
// arguments.callee), modules registered with cordova.define, calls made through
// require('cordova/exec') with the SDK version string put in front of the args, and the modules
// published on navigator. Only the global `cordova`, `navigator` and `document` are used.

var CLIENT_SDK_VERSION = "13.0.2";

cordova.define("com.salesforce.util.exec", function (require, exports, module) {
    // Puts "pluginSDKVersion:<v>" first, as the SDK's exec does, then calls cordova's exec.
    module.exports = {
        exec: function (version, success, fail, service, action, args) {
            args.unshift("pluginSDKVersion:" + version);
            var cordovaExec = require("cordova/exec");
            return cordovaExec(function () { if (typeof success === "function") success.apply(null, arguments); },
                               function () { if (typeof fail === "function") fail.apply(null, arguments); },
                               service, action, args);
        }
    };
});

cordova.define("com.salesforce.plugin.smartstore", function (require, exports, module) {
    var SERVICE = "com.salesforce.smartstore";
    var exec = require("com.salesforce.util.exec").exec;

    // The optional first argument: a storeConfig object, a bare isGlobalStore boolean, or nothing.
    function checkFirstArg(callerArgs) {
        var list = Array.prototype.slice.call(callerArgs);
        if (typeof list[0] === "object" && list[0] !== null && list[0].hasOwnProperty("isGlobalStore")) return false;
        var global = typeof list[0] === "boolean" ? (list.shift() || false) : false;
        list.unshift({ isGlobalStore: global });
        callerArgs.callee.apply(null, list);
        return true;
    }

    function call(action, config, fields, success, fail) {
        fields.isGlobalStore = config.isGlobalStore;
        fields.storeName = config.storeName;
        exec(CLIENT_SDK_VERSION, success, fail, SERVICE, action, [fields]);
    }

    function spec(queryType, indexPath) {
        return { queryType: queryType, indexPath: indexPath, matchKey: null, likeKey: null, beginKey: null, endKey: null,
                 smartSql: null, orderPath: indexPath, order: "ascending", pageSize: 10, selectPaths: null };
    }

    var registerSoup = function (storeConfig, soupName, indexSpecs, success, fail) {
        if (checkFirstArg(arguments)) return;
        call("pgRegisterSoup", storeConfig, { soupName: soupName, indexes: indexSpecs }, success, fail);
    };
    var upsertSoupEntriesWithExternalId = function (storeConfig, soupName, entries, externalIdPath, success, fail) {
        if (checkFirstArg(arguments)) return;
        call("pgUpsertSoupEntries", storeConfig, { soupName: soupName, entries: entries, externalIdPath: externalIdPath }, success, fail);
    };
    var upsertSoupEntries = function (storeConfig, soupName, entries, success, fail) {
        if (checkFirstArg(arguments)) return;
        upsertSoupEntriesWithExternalId(storeConfig, soupName, entries, "_soupEntryId", success, fail);
    };
    var querySoup = function (storeConfig, soupName, querySpec, success, fail) {
        if (checkFirstArg(arguments)) return;
        call("pgQuerySoup", storeConfig, { soupName: soupName, querySpec: querySpec }, success, fail);
    };
    var runSmartQuery = function (storeConfig, querySpec, success, fail) {
        if (checkFirstArg(arguments)) return;
        call("pgRunSmartQuery", storeConfig, { querySpec: querySpec }, success, fail);
    };
    var moveCursorToPageIndex = function (storeConfig, cursor, index, success, fail) {
        if (checkFirstArg(arguments)) return;
        call("pgMoveCursorToPageIndex", storeConfig, { cursorId: cursor.cursorId, index: index }, success, fail);
    };
    var moveCursorToNextPage = function (storeConfig, cursor, success, fail) {
        if (checkFirstArg(arguments)) return;
        if (cursor.currentPageIndex + 1 >= cursor.totalPages) fail(new Error("moveCursorToNextPage called while on last page"));
        else moveCursorToPageIndex(storeConfig, cursor, cursor.currentPageIndex + 1, success, fail);
    };
    var closeCursor = function (storeConfig, cursor, success, fail) {
        if (checkFirstArg(arguments)) return;
        call("pgCloseCursor", storeConfig, { cursorId: cursor.cursorId }, success, fail);
    };
    var soupExists = function (storeConfig, soupName, success, fail) {
        if (checkFirstArg(arguments)) return;
        call("pgSoupExists", storeConfig, { soupName: soupName }, success, fail);
    };

    module.exports = {
        registerSoup: registerSoup, upsertSoupEntries: upsertSoupEntries,
        upsertSoupEntriesWithExternalId: upsertSoupEntriesWithExternalId, querySoup: querySoup,
        runSmartQuery: runSmartQuery, moveCursorToPageIndex: moveCursorToPageIndex,
        moveCursorToNextPage: moveCursorToNextPage, closeCursor: closeCursor, soupExists: soupExists,
        buildAllQuerySpec: function (path, order, pageSize) {
            var s = spec("range", path);
            if (order) s.order = order;
            if (pageSize) s.pageSize = pageSize;
            return s;
        },
        buildSmartQuerySpec: function (smartSql, pageSize) {
            var s = spec("smart", null);
            s.smartSql = smartSql;
            s.orderPath = null;
            if (pageSize) s.pageSize = pageSize;
            return s;
        }
    };
});

navigator.smartstore = cordova.require("com.salesforce.plugin.smartstore");

cordova.define("com.salesforce.plugin.mobilesync", function (require, exports, module) {
    var SERVICE = "com.salesforce.mobilesync";
    var exec = require("com.salesforce.util.exec").exec;

    function checkFirstArg(callerArgs) {
        var list = Array.prototype.slice.call(callerArgs);
        if (typeof list[0] === "object" && list[0] !== null && list[0].hasOwnProperty("isGlobalStore")) return false;
        var global = typeof list[0] === "boolean" ? (list.shift() || false) : false;
        list.unshift({ isGlobalStore: global });
        callerArgs.callee.apply(null, list);
        return true;
    }

    // (storeConfig, target, soupName, options, success, fail): syncName null put in.
    function checkSyncNameArg(callerArgs) {
        var list = Array.prototype.slice.call(callerArgs);
        if (typeof list[4] !== "function") return false;
        list.splice(4, 0, null);
        callerArgs.callee.apply(null, list);
        return true;
    }

    function reference(idOrName) {
        return { syncId: typeof idOrName === "string" ? null : idOrName, syncName: typeof idOrName === "string" ? idOrName : null };
    }

    function call(action, config, fields, success, fail) {
        fields.isGlobalStore = config.isGlobalStore;
        fields.storeName = config.storeName;
        exec(CLIENT_SDK_VERSION, success, fail, SERVICE, action, [fields]);
    }

    var syncDown = function (storeConfig, target, soupName, options, syncName, success, fail) {
        if (checkFirstArg(arguments)) return;
        if (checkSyncNameArg(arguments)) return;
        call("syncDown", storeConfig, { syncName: syncName, target: target, soupName: soupName, options: options }, success, fail);
    };
    var reSync = function (storeConfig, idOrName, success, fail) {
        if (checkFirstArg(arguments)) return;
        call("reSync", storeConfig, reference(idOrName), success, fail);
    };
    var cleanResyncGhosts = function (storeConfig, syncId, success, fail) {
        if (checkFirstArg(arguments)) return;
        call("cleanResyncGhosts", storeConfig, { syncId: syncId }, success, fail);
    };
    var getSyncStatus = function (storeConfig, idOrName, success, fail) {
        if (checkFirstArg(arguments)) return;
        // The native side answers {} for an unknown sync: the JS half gives null.
        call("getSyncStatus", storeConfig, reference(idOrName), function (sync) {
            if (typeof success === "function") success(sync._soupEntryId === undefined ? null : sync);
        }, fail);
    };

    module.exports = {
        MERGE_MODE: { OVERWRITE: "OVERWRITE", LEAVE_IF_CHANGED: "LEAVE_IF_CHANGED" },
        syncDown: syncDown, reSync: reSync, cleanResyncGhosts: cleanResyncGhosts, getSyncStatus: getSyncStatus
    };
});

navigator.mobilesync = cordova.require("com.salesforce.plugin.mobilesync");
